//! Numbering counter values: one sequence per property name and database,
//! locked until commit so that two writes (or two processes) never take the
//! same number.

use std::collections::HashMap;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use crate::db::values;
use crate::model::counter;
use crate::model::value::{Value, ValueInput};

/// The last number of each counter this transaction holds the lock of.
#[derive(Debug, Default)]
pub(super) struct CounterCache {
    last: HashMap<String, Option<(String, f64)>>,
}

impl CounterCache {
    /// Locks the sequences of the counters among `inputs` not locked yet (in
    /// name order, so two writes never wait on each other crosswise) until
    /// commit, and reads each one's last number once per transaction.
    pub async fn lock(&mut self, conn: &mut AsyncPgConnection, db: &str, inputs: &[ValueInput]) -> QueryResult<()> {
        for prop in self.unlocked(inputs) {
            let last = read_locked(conn, db, prop).await?;
            self.last.insert(prop.to_owned(), last);
        }
        Ok(())
    }

    /// The counter properties among `inputs` this transaction holds no lock
    /// of yet, in name order, each once.
    fn unlocked<'a>(&self, inputs: &'a [ValueInput]) -> Vec<&'a str> {
        let mut props: Vec<&str> = inputs
            .iter()
            .filter(|input| matches!(input.value, Value::Counter { .. }))
            .map(|input| input.prop.as_str())
            .filter(|prop| !self.last.contains_key(*prop))
            .collect();
        props.sort_unstable();
        props.dedup();
        props
    }

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
            Some(last) => last.clone(),
            None => read_locked(conn, db, prop).await?,
        };
        let (string, number) = counter::next(last.as_ref().map(|(s, n)| (s.as_str(), *n)), step);
        self.last.insert(prop.to_owned(), Some((string.clone(), number)));
        Ok((string, number))
    }

    /// A number written or overwritten by hand: read the sequence again.
    pub fn forget(&mut self, prop: &str) {
        self.last.remove(prop);
    }
}

/// Locks `prop`'s sequence until commit and reads its last number.
async fn read_locked(conn: &mut AsyncPgConnection, db: &str, prop: &str) -> QueryResult<Option<(String, f64)>> {
    values::lock_counter(conn, db, prop).await?;
    values::largest_number(conn, db, prop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_locked_in_name_order_once_each_and_only_once_per_transaction() {
        let counter = |prop| ValueInput::new(prop, Value::Counter { step: 1.0 });
        let inputs = [
            counter("no"),
            ValueInput::new("title", Value::String("a".into())),
            counter("invoice"),
            counter("no"),
            ValueInput::new("page", Value::Number(3.0)),
        ];
        let mut cache = CounterCache::default();
        assert_eq!(cache.unlocked(&inputs), ["invoice", "no"]);
        cache.last.insert("invoice".into(), None);
        assert_eq!(cache.unlocked(&inputs), ["no"]);
        cache.forget("invoice");
        assert_eq!(cache.unlocked(&inputs), ["invoice", "no"]);
    }
}
