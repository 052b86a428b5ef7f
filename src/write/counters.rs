//! Numbering counter values: one sequence per property name and database.
//! Writes run under the database's write lock (`batch::run_batch`), so two
//! writes, of one process or two, never take the same number.

use std::collections::HashMap;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use crate::db::values;
use crate::model::counter;

/// The last number of each counter this transaction has read or taken.
#[derive(Debug, Default)]
pub(super) struct CounterCache {
    last: HashMap<String, (String, f64)>,
}

impl CounterCache {
    /// The next value (string and number) of `prop`'s sequence, `step` on
    /// from its last, which it becomes.
    pub async fn next(
        &mut self,
        conn: &mut AsyncPgConnection,
        db: &str,
        prop: &str,
        step: f64,
    ) -> QueryResult<(String, f64)> {
        let last = match self.last.get(prop) {
            Some(last) => Some(last.clone()),
            None => values::largest_number(conn, db, prop).await?,
        };
        let (string, number) = counter::next(last.as_ref().map(|(s, n)| (s.as_str(), *n)), step);
        self.last.insert(prop.to_owned(), (string.clone(), number));
        Ok((string, number))
    }

    /// A number written or overwritten by hand: read the sequence again.
    pub fn forget(&mut self, prop: &str) {
        self.last.remove(prop);
    }
}
