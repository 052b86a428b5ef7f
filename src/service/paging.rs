//! `limit` and `skip` of the paged reads that take them from a query
//! string: an entity's history, a webhook's deliveries, a person's activity.

use serde::Deserialize;

use crate::error::{ApiError, ErrorCode};
use crate::query::DEFAULT_LIMIT;

/// `limit` and `skip` as the query string gives them.
#[derive(Debug, Default, Deserialize)]
pub struct Paging {
    pub limit: Option<String>,
    pub skip: Option<String>,
}

/// A page: at most `limit` items after the first `skip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: usize,
    pub skip: usize,
}

impl Paging {
    /// Forgiving: what is not a whole number takes the default (`limit`
    /// 100, `skip` 0), as does a `limit` of 0; `limit` is at most `max_limit`.
    pub fn lenient(&self, max_limit: usize) -> Page {
        let number = |text: &Option<String>| text.as_deref().and_then(|t| t.trim().parse::<usize>().ok());
        Page {
            limit: number(&self.limit)
                .filter(|limit| *limit > 0)
                .unwrap_or(DEFAULT_LIMIT as usize)
                .min(max_limit),
            skip: number(&self.skip).unwrap_or(0),
        }
    }

    /// Strict: 400 `invalid_query` when either is not a whole number or
    /// over its maximum; a `limit` of 0 takes the default.
    pub fn strict(&self, max_limit: usize, max_skip: usize) -> Result<Page, ApiError> {
        Ok(Page {
            limit: page_number("limit", self.limit.as_deref(), max_limit)?
                .filter(|limit| *limit > 0)
                .unwrap_or(DEFAULT_LIMIT as usize),
            skip: page_number("skip", self.skip.as_deref(), max_skip)?.unwrap_or(0),
        })
    }
}

fn page_number(name: &str, text: Option<&str>, max: usize) -> Result<Option<usize>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    match text.trim().parse::<usize>() {
        Ok(number) if number <= max => Ok(Some(number)),
        _ => Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("{name} is a whole number up to {max}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paging(limit: Option<&str>, skip: Option<&str>) -> Paging {
        Paging {
            limit: limit.map(str::to_owned),
            skip: skip.map(str::to_owned),
        }
    }

    #[test]
    fn lenient_paging_takes_the_default_for_what_is_not_a_whole_number() {
        assert_eq!(paging(None, None).lenient(1000), Page { limit: 100, skip: 0 });
        assert_eq!(
            paging(Some("x"), Some("-1")).lenient(1000),
            Page { limit: 100, skip: 0 }
        );
        assert_eq!(
            paging(Some("0"), Some(" 7 ")).lenient(1000),
            Page { limit: 100, skip: 7 }
        );
        assert_eq!(paging(Some("5000"), None).lenient(1000), Page { limit: 1000, skip: 0 });
    }

    #[test]
    fn strict_paging_refuses_what_is_not_a_whole_number_or_over_its_maximum() {
        assert_eq!(
            paging(Some("0"), Some("3")).strict(1000, 10).unwrap(),
            Page { limit: 100, skip: 3 }
        );
        for (limit, skip) in [
            (Some("x"), None),
            (Some("1001"), None),
            (None, Some("11")),
            (None, Some("-1")),
        ] {
            let refused = paging(limit, skip).strict(1000, 10).unwrap_err();
            assert_eq!(refused.code, ErrorCode::InvalidQuery, "{limit:?} {skip:?}");
        }
    }
}
