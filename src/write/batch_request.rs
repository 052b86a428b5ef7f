//! What a batch asks the writer to do (`batch_ops.rs` applies it).

use crate::model::value::ValueInput;

/// Operations applied together; with `dry_run`, checked and rolled back.
#[derive(Debug, Clone)]
pub struct Batch {
    pub operations: Vec<BatchOp>,
    pub dry_run: bool,
}

#[derive(Debug, Clone)]
pub enum BatchOp {
    /// A new entity; with `name`, later operations may name it `$name`.
    Create {
        name: Option<String>,
        values: Vec<ValueInput>,
        refs: Vec<RefUse>,
    },
    Add {
        entity: EntityId,
        values: Vec<ValueInput>,
        refs: Vec<RefUse>,
    },
    DeleteProperty {
        value_id: String,
    },
    DeleteEntity {
        entity: EntityId,
    },
}

/// An entity an operation writes: by id, or by the `$name` of an earlier create.
#[derive(Debug, Clone, PartialEq)]
pub enum EntityId {
    Id(String),
    Ref(String),
}

/// Value `value` of an operation references the entity created as `name`.
#[derive(Debug, Clone, PartialEq)]
pub struct RefUse {
    pub value: usize,
    pub name: String,
}

impl BatchOp {
    /// The values the operation writes.
    pub fn values(&self) -> &[ValueInput] {
        match self {
            BatchOp::Create { values, .. } | BatchOp::Add { values, .. } => values,
            _ => &[],
        }
    }
}
