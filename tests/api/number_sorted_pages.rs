//! A page of a type sorted by a number property no entity holds twice starts
//! where the number tallies say (`query::sql::sorted_by_number`): for every
//! caller, near the start and deep, it holds the entities a full sort would
//! put there, ties in `_id` order, those without a price last, and stays so
//! after writes.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

/// Who reads an item: everyone, signed-in persons, its owner and the
/// reader, or its owner alone.
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Public,
    Domain,
    Viewer,
    Owner,
}

const ITEMS: usize = 1_700;

struct Shop {
    app: TestApp,
    owner: String,
    reader: String,
    /// Each item's id, price (`None`: it has none) and who reads it.
    items: Vec<(String, Option<f64>, Seen)>,
}

/// Item `index`'s price: across zero and many buckets, every 40th the same
/// as the one before it (ties), every 25th none.
fn price(index: usize) -> Option<f64> {
    let index = if index % 40 == 5 { index - 1 } else { index };
    (index % 25 != 24).then(|| ((index * 7919) % ITEMS) as f64 * 0.75 - 300.0)
}

impl Shop {
    async fn start() -> Shop {
        let app = TestApp::start().await;
        let owner = app.owner_token().await;
        let (reader_id, reader_key) = app.add_person(&owner, "Reader").await;
        let reader = app.token_for(&reader_key).await;
        let item = app.public_type_with_price(&owner, "item").await;
        let public = json!({"type": "_sharing", "string": "public"});
        let mut seen = Vec::new();
        let operations: Vec<Json> = (0..ITEMS)
            .map(|index| {
                // most public: every caller's pages go a thousand deep
                let reads = match index % 10 {
                    0 => Seen::Owner,
                    1 => Seen::Viewer,
                    2 => Seen::Domain,
                    _ => Seen::Public,
                };
                seen.push(reads);
                let mut values = vec![json!({"type": "_type", "reference": item})];
                if let Some(price) = price(index) {
                    values.push(json!({"type": "price", "number": price}));
                }
                match reads {
                    Seen::Public => values.push(public.clone()),
                    Seen::Domain => values.push(json!({"type": "_sharing", "string": "domain"})),
                    Seen::Viewer => values.push(json!({"type": "_viewer", "reference": reader_id})),
                    Seen::Owner => {}
                }
                json!({"op": "create", "properties": values})
            })
            .collect();
        let (status, body) = app
            .call(
                "POST",
                "/api/demo/batch",
                Some(&owner),
                Some(json!({"operations": operations})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let items = body["results"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(index, result)| (result["_id"].as_str().unwrap().to_owned(), price(index), seen[index]))
            .collect();
        app.settle().await;
        Shop {
            app,
            owner,
            reader,
            items,
        }
    }

    /// The ids of the items `sees` may read, in the order of `sort=price`
    /// (`-price` when `descending`): by price, ties by id, unpriced last.
    fn sorted(&self, sees: &[Seen], descending: bool) -> Vec<&str> {
        let mut read: Vec<&(String, Option<f64>, Seen)> =
            self.items.iter().filter(|(_, _, seen)| sees.contains(seen)).collect();
        read.sort_by(|(a_id, a, _), (b_id, b, _)| {
            let by_price = match (a, b) {
                (Some(a), Some(b)) if descending => b.total_cmp(a),
                (Some(a), Some(b)) => a.total_cmp(b),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            };
            by_price.then(a_id.cmp(b_id))
        });
        read.into_iter().map(|(id, _, _)| id.as_str()).collect()
    }

    /// Checks pages sorted both ways, for the owner, the reader and an
    /// anonymous caller, against the items as they are: the first, pages
    /// deep in the priced items, and one reaching past them into the
    /// unpriced.
    async fn check_sorted_pages(&self) {
        let callers: [(Option<&str>, &[Seen], &str); 3] = [
            (
                Some(&self.owner),
                &[Seen::Public, Seen::Domain, Seen::Viewer, Seen::Owner],
                "owner",
            ),
            (
                Some(&self.reader),
                &[Seen::Public, Seen::Domain, Seen::Viewer],
                "reader",
            ),
            (None, &[Seen::Public], "anonymous"),
        ];
        for (token, sees, caller) in callers {
            for descending in [true, false] {
                let expected = self.sorted(sees, descending);
                let priced = self
                    .items
                    .iter()
                    .filter(|(_, price, seen)| price.is_some() && sees.contains(seen));
                let priced = priced.count();
                let mut skips = vec![priced.saturating_sub(40), priced.saturating_sub(10)];
                skips.extend(
                    [999, 1_000, 1_001, 1_017]
                        .into_iter()
                        .filter(|skip| *skip < expected.len()),
                );
                for skip in skips {
                    let sort = if descending { "-price.number" } else { "price.number" };
                    let path =
                        format!("/api/demo/entity?_type.string=item&sort={sort}&skip={skip}&limit=25&props=price");
                    let (status, body) = self.app.call("GET", &path, token, None).await;
                    assert_eq!(status, 200, "{body}");
                    let ids: Vec<&str> = body["entities"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|entity| entity["_id"].as_str().unwrap())
                        .collect();
                    let end = (skip + 25).min(expected.len());
                    assert_eq!(ids, expected[skip.min(end)..end], "{path} for the {caller}");
                    assert_eq!(body["count"], expected.len(), "{path} for the {caller}");
                }
            }
        }
    }
}

#[tokio::test]
async fn a_page_sorted_by_a_number_starts_where_the_tallies_say_for_every_caller_through_writes() {
    let mut shop = Shop::start().await;
    let plan = shop
        .app
        .plans_of(&[("_type.string", "item"), ("sort", "-price.number"), ("skip", "1000")])
        .await;
    assert!(plan.contains("number_tallies"), "{plan}");
    assert!(plan.contains("property_values_number"), "{plan}");
    shop.check_sorted_pages().await;
    // a skip past everything, as large as a skip can be
    let path = format!(
        "/api/demo/entity?_type.string=item&sort=-price.number&skip={}&limit=5",
        i64::MAX
    );
    let (status, body) = shop.app.call("GET", &path, Some(&shop.owner), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entities"], json!([]));
    assert_eq!(body["count"], ITEMS);

    // an item deleted, a price deleted, a public item made private
    let deleted = shop.items.remove(3).0;
    let (status, body) = shop
        .app
        .delete(&format!("/api/demo/entity/{deleted}"), &shop.owner)
        .await;
    assert_eq!(status, 200, "{body}");
    let unpriced = &mut shop.items[4];
    assert!(unpriced.1.is_some());
    unpriced.1 = None;
    let unpriced = unpriced.0.clone();
    shop.app.delete_first_value(&shop.owner, &unpriced, "price").await;
    let made_private = shop.items.iter_mut().find(|item| item.2 == Seen::Public).unwrap();
    made_private.2 = Seen::Owner;
    let made_private = made_private.0.clone();
    shop.app
        .delete_first_value(&shop.owner, &made_private, "_sharing")
        .await;
    shop.app.settle().await;
    shop.check_sorted_pages().await;
}
