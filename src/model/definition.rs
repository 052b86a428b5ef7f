//! Property definitions (entities of type `property` whose `_parent` is the
//! entity type) and the fixed rules of system properties.

use serde_json::Value as Json;

use crate::model::value::{ValueField, ValueType};
use crate::rights::Sharing;

/// What the service reads from a property definition entity.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyDefinition {
    pub value_type: Option<ValueType>,
    pub multilingual: bool,
    /// Values are full-text searchable (`q`).
    pub search: bool,
    /// The definition's own `_sharing`: the widest view its values appear in.
    pub sharing: Sharing,
    /// Computes the values instead of storing them (see docs/guide/src/concepts/formulas.md).
    pub formula: Option<String>,
}

impl PropertyDefinition {
    /// Reads a definition from its entity projection (`{"type":[{"string":..}],..}`).
    pub fn from_doc(doc: &Json) -> PropertyDefinition {
        let first = |prop: &str, field: &str| doc.get(prop)?.get(0)?.get(field).cloned();
        PropertyDefinition {
            value_type: first("type", "string")
                .as_ref()
                .and_then(Json::as_str)
                .and_then(ValueType::parse),
            multilingual: first("multilingual", "boolean")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            search: first("search", "boolean").and_then(|v| v.as_bool()).unwrap_or(false),
            formula: first("formula", "string")
                .as_ref()
                .and_then(Json::as_str)
                .filter(|text| !text.trim().is_empty())
                .map(str::to_owned),
            sharing: first("_sharing", "string")
                .as_ref()
                .and_then(Json::as_str)
                .and_then(Sharing::parse)
                .unwrap_or(Sharing::Private),
        }
    }
}

/// The `_`-prefixed properties the service gives meaning to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemProperty {
    Type,
    Parent,
    Owner,
    Editor,
    Expander,
    Viewer,
    NoAccess,
    Sharing,
    InheritRights,
    Created,
}

impl SystemProperty {
    pub fn parse(name: &str) -> Option<SystemProperty> {
        Some(match name {
            "_type" => SystemProperty::Type,
            "_parent" => SystemProperty::Parent,
            "_owner" => SystemProperty::Owner,
            "_editor" => SystemProperty::Editor,
            "_expander" => SystemProperty::Expander,
            "_viewer" => SystemProperty::Viewer,
            "_noaccess" => SystemProperty::NoAccess,
            "_sharing" => SystemProperty::Sharing,
            "_inheritrights" => SystemProperty::InheritRights,
            "_created" => SystemProperty::Created,
            _ => return None,
        })
    }

    /// The value field its values are written in.
    pub fn field(self) -> ValueField {
        match self {
            SystemProperty::Sharing => ValueField::String,
            SystemProperty::InheritRights => ValueField::Boolean,
            _ => ValueField::Reference,
        }
    }

    /// Rights lists, sharing, inheritance and the parent: only an `_owner` may change them.
    pub fn needs_owner(self) -> bool {
        !matches!(self, SystemProperty::Type | SystemProperty::Created)
    }

    /// Values the caller may write at all (`_created` is the service's).
    pub fn is_writable(self) -> bool {
        self != SystemProperty::Created
    }

    /// Values the caller may delete: the rights lists and flags, and `_parent`.
    pub fn is_deletable(self) -> bool {
        !matches!(self, SystemProperty::Type | SystemProperty::Created)
    }
}

/// Server-managed billing limits: neither written nor deleted through the API.
pub fn is_billing_property(name: &str) -> bool {
    name.starts_with("billing_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definition_reads_its_attributes() {
        let doc = json!({"type":[{"_id":"x","string":"number"}],"multilingual":[{"boolean":true}],
            "search":[{"boolean":true}],"_sharing":[{"string":"public"}]});
        let def = PropertyDefinition::from_doc(&doc);
        assert_eq!(def.value_type, Some(ValueType::Number));
        assert!(def.multilingual && def.search);
        assert_eq!(def.sharing, Sharing::Public);
        assert_eq!(PropertyDefinition::from_doc(&json!({})).sharing, Sharing::Private);
    }

    #[test]
    fn system_property_rules() {
        assert_eq!(SystemProperty::parse("_sharing").unwrap().field(), ValueField::String);
        assert!(SystemProperty::parse("_owner").unwrap().needs_owner());
        assert!(!SystemProperty::Type.is_deletable());
        assert!(!SystemProperty::Created.is_writable());
        assert!(SystemProperty::parse("_other").is_none());
        assert!(is_billing_property("billing_entities_limit"));
    }
}
