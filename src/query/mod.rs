//! The list query language of `GET /api/{db}/entity`: the query string parsed
//! into a typed query (`parse`, pure), and SQL generated from it (`sql`).

pub mod cache;
mod parse;
pub mod sql;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

pub const DEFAULT_LIMIT: i64 = 100;

/// The field of a value a filter or sort key reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    String,
    Number,
    Boolean,
    Date,
    Datetime,
    Reference,
    Filesize,
    Filename,
    Filetype,
    Language,
    /// The value's own id: `<prop>._id.exists` asks for any live value of
    /// `prop`, whatever its field (never a sort or group key).
    Id,
    /// The name of the property holding a value: `_reference.property_type`
    /// (never a sort or group key).
    PropertyType,
}

/// The pseudo-property `_reference`: every live reference value of an entity
/// in a property whose name does not start with `_`, each also carrying its
/// property's name as `property_type`. `_reference.reference=ID` lists the
/// entities that refer to ID (the original's clients ask it so).
pub const REFERENCES: &str = "_reference";

impl Field {
    pub fn parse(name: &str) -> Option<Field> {
        Some(match name {
            "string" => Field::String,
            "number" => Field::Number,
            "boolean" => Field::Boolean,
            "date" => Field::Date,
            "datetime" => Field::Datetime,
            "reference" => Field::Reference,
            "filesize" => Field::Filesize,
            "filename" => Field::Filename,
            "filetype" => Field::Filetype,
            "language" => Field::Language,
            _ => return None,
        })
    }

    /// Whether the field takes the string operators (rule 8: file names,
    /// types and languages are filtered as strings).
    fn is_textual(self) -> bool {
        matches!(
            self,
            Field::String | Field::Filename | Field::Filetype | Field::Language | Field::PropertyType
        )
    }

    /// The operators the spec's table allows on this field.
    fn allows(self, op: Operator) -> bool {
        use Operator::*;
        match op {
            Eq | In | Exists => true,
            Regex => self.is_textual(),
            Ne => self.is_textual() || self == Field::Number,
            Gt | Gte | Lt | Lte => !matches!(self, Field::Boolean | Field::Reference),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Exists,
    Regex,
}

impl Operator {
    fn parse(name: &str) -> Option<Operator> {
        Some(match name {
            "ne" => Operator::Ne,
            "gt" => Operator::Gt,
            "gte" => Operator::Gte,
            "lt" => Operator::Lt,
            "lte" => Operator::Lte,
            "in" => Operator::In,
            "exists" => Operator::Exists,
            "regex" => Operator::Regex,
            _ => return None,
        })
    }
}

/// A typed filter operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Text(String),
    Number(f64),
    Boolean(bool),
    Date(NaiveDate),
    Datetime(DateTime<Utc>),
    Integer(i64),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `Eq`, `Ne`, `Gt`, `Gte`, `Lt` or `Lte` against one operand.
    Compare(Operator, Operand),
    In(Vec<Operand>),
    Exists(bool),
    /// A validated pattern and the flags that take effect (`i`, `m`, `s`).
    Regex {
        pattern: String,
        flags: RegexFlags,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegexFlags {
    pub case_insensitive: bool,
    pub multi_line: bool,
    pub dot_all: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub prop: String,
    pub field: Field,
    pub condition: Condition,
}

/// A sort key: `prop.field`, or `_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub target: SortTarget,
    pub descending: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SortTarget {
    Id,
    Value { prop: String, field: Field },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    pub filters: Vec<Filter>,
    pub sort: Vec<SortKey>,
    pub limit: i64,
    pub skip: i64,
    /// Property names to return (`_id` is always returned); `None` returns all.
    pub props: Option<Vec<String>>,
    /// Full-text words (lowercased, at most 20 characters each); all must match.
    pub words: Vec<String>,
    /// Group by these values: one row per distinct combination.
    pub group: Vec<(String, Field)>,
}

impl ListQuery {
    /// Whether an answer's documents list property `prop`: `_id` and the
    /// `props` asked for, or all.
    pub fn lists(&self, prop: &str) -> bool {
        self.props
            .as_ref()
            .is_none_or(|props| prop == "_id" || props.iter().any(|p| p == prop))
    }

    /// Whether the query may have to read every entity of the database:
    /// full-text words, `regex`, `ne` and `exists=false` filters test rows
    /// found otherwise (no index finds their matches), and a group or a sort
    /// by a value with no other filter reads every entity. Such queries share
    /// the smaller budget of [`ExpensiveQueries`].
    pub fn is_expensive(&self) -> bool {
        let unindexable = |filter: &Filter| {
            matches!(
                filter.condition,
                Condition::Regex { .. } | Condition::Compare(Operator::Ne, _) | Condition::Exists(false)
            )
        };
        let narrowed = self.filters.iter().any(|filter| !unindexable(filter));
        let sorted_by_value = self
            .sort
            .iter()
            .any(|key| matches!(key.target, SortTarget::Value { .. }));
        !self.words.is_empty()
            || self.filters.iter().any(unindexable)
            || (!narrowed && (!self.group.is_empty() || sorted_by_value))
    }
}

/// The connections expensive queries (see [`ListQuery::is_expensive`]) may
/// hold at once: fewer than the pool has, so however many of them arrive,
/// cheap requests still find a connection. Cheap queries never wait here.
pub struct ExpensiveQueries {
    permits: Arc<Semaphore>,
    /// Longest wait for a permit (`None`: no limit).
    wait: Option<Duration>,
}

impl ExpensiveQueries {
    /// `permits` at once, or half the pool (at least 1) for 0; a query waits
    /// at most `wait_ms` for one (0: no limit), as for a pooled connection.
    pub fn new(permits: usize, pool_size: usize, wait_ms: u64) -> ExpensiveQueries {
        let permits = if permits == 0 { pool_size / 2 } else { permits }.max(1);
        ExpensiveQueries {
            permits: Arc::new(Semaphore::new(permits)),
            wait: (wait_ms > 0).then(|| Duration::from_millis(wait_ms)),
        }
    }

    /// A permit for an expensive query, to hold while it uses a connection;
    /// `None` for a cheap one. 503 `database_busy` when none came free in time.
    pub async fn admit(&self, query: &ListQuery) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        if !query.is_expensive() {
            return Ok(None);
        }
        let acquire = self.permits.clone().acquire_owned();
        let permit = match self.wait {
            Some(wait) => tokio::time::timeout(wait, acquire)
                .await
                .map_err(|_| ApiError::database_busy())?,
            None => acquire.await,
        };
        // the semaphore is never closed
        Ok(Some(permit.expect("an open semaphore")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &[(&str, &str)]) -> Result<ListQuery, ApiError> {
        let params: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ListQuery::parse(&params)
    }

    #[test]
    fn unindexable_filters_words_and_unfiltered_groups_and_value_sorts_are_expensive() {
        for query in [
            &[("q", "a")][..],
            &[("title.string.regex", ".*x")],
            &[("_type.string", "book"), ("price.number.ne", "1")],
            &[("price.number.exists", "false")],
            &[("group", "author.reference")],
            &[("sort", "-price.number")],
            &[("price.number.ne", "1"), ("sort", "title.string")],
        ] {
            assert!(parse(query).unwrap().is_expensive(), "{query:?}");
        }
        for query in [
            &[][..],
            &[("limit", "1000000")],
            &[("sort", "-_id")],
            &[("_type.string", "book"), ("sort", "-price.number")],
            &[("_type.string", "book"), ("group", "author.reference")],
            &[("price.number.gte", "1"), ("price.number.exists", "true")],
        ] {
            assert!(!parse(query).unwrap().is_expensive(), "{query:?}");
        }
    }

    #[actix_rt::test]
    async fn expensive_queries_wait_for_a_permit_and_cheap_ones_never_do() {
        let budget = ExpensiveQueries::new(0, 3, 50);
        let expensive = parse(&[("q", "a")]).unwrap();
        let held = budget.admit(&expensive).await.unwrap();
        assert!(held.is_some(), "half of 3 rounds down to 1 permit");
        let refused = budget.admit(&expensive).await.unwrap_err();
        assert_eq!(
            (refused.status().as_u16(), refused.code.as_str()),
            (503, "database_busy")
        );
        assert!(budget.admit(&parse(&[]).unwrap()).await.unwrap().is_none());
        drop(held);
        assert!(budget.admit(&expensive).await.unwrap().is_some());
    }
}
