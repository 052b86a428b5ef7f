//! A range of a number property no entity holds twice is counted from the
//! number tallies for the buckets it spans whole and from the value index
//! at its ends (migration `number_tallies`): its count stays exact for every
//! caller, at bucket boundaries, across zero and negative numbers, and
//! after deletes, rights changes and a second value.

use crate::support;

use serde_json::json;
use support::TestApp;

/// Who sees a gadget: everyone, signed-in persons, its owner and the
/// reader, or its owner alone.
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Public,
    Domain,
    Viewer,
    Owner,
}

struct Gadgets {
    app: TestApp,
    owner: String,
    reader: String,
    /// Each gadget's id, price and who sees it; `None` once deleted.
    gadgets: Vec<Option<(String, f64, Seen)>>,
}

/// The bounds the counts are checked over: exact prices held, the start of
/// a power of two, zero from both sides, and far past every price.
const BOUNDS: [f64; 12] = [
    -1e9, -745.0, -37.25, -0.5, 0.0, 0.25, 1.0, 512.0, 990.0, 990.25, 1000.0, 1e9,
];

impl Gadgets {
    async fn start() -> Gadgets {
        let app = TestApp::start().await;
        let owner = app.owner_token().await;
        let (reader_id, reader_key) = app.add_person(&owner, "Reader").await;
        let reader = app.token_for(&reader_key).await;
        let gadget = app.public_type_with_price(&owner, "gadget").await;
        let public = json!({"type": "_sharing", "string": "public"});
        // prices on both sides of zero, some on bucket boundaries (512,
        // 990) and some one bucket apart (990.25 is past 990's 1,024th of 512)
        let mut prices: Vec<f64> = (0..40).map(|i| f64::from(i - 20) * 37.25).collect();
        prices.extend([0.0, -0.0, 0.25, 1.0, 512.0, 511.5, 990.0, 990.25, 990.5, 999.75, 1000.0]);
        let mut gadgets = Vec::new();
        for (index, price) in prices.into_iter().enumerate() {
            let seen = [Seen::Public, Seen::Domain, Seen::Viewer, Seen::Owner][index % 4];
            let mut values = vec![json!({"type": "price", "number": price})];
            match seen {
                Seen::Public => values.push(public.clone()),
                Seen::Domain => values.push(json!({"type": "_sharing", "string": "domain"})),
                Seen::Viewer => values.push(json!({"type": "_viewer", "reference": reader_id})),
                Seen::Owner => {}
            }
            let id = app.create(&owner, &gadget, json!(values)).await;
            gadgets.push(Some((id, price, seen)));
        }
        app.settle().await;
        Gadgets {
            app,
            owner,
            reader,
            gadgets,
        }
    }

    /// The `count` of a page of one gadget in `range`, as `token` sees it.
    async fn count(&self, token: Option<&str>, range: &str) -> i64 {
        let path = format!("/api/demo/entity?_type.string=gadget&{range}&limit=1");
        let (status, body) = self.app.call("GET", &path, token, None).await;
        assert_eq!(status, 200, "{body}");
        body["count"].as_i64().unwrap()
    }

    /// Checks the count of every range over [`BOUNDS`] for the owner, the
    /// reader and an anonymous caller against the gadgets as they are.
    async fn check_every_range(&self) {
        let callers: [(Option<&str>, &[Seen]); 3] = [
            (
                Some(&self.owner),
                &[Seen::Public, Seen::Domain, Seen::Viewer, Seen::Owner],
            ),
            (Some(&self.reader), &[Seen::Public, Seen::Domain, Seen::Viewer]),
            (None, &[Seen::Public]),
        ];
        let ranges = BOUNDS.iter().flat_map(|low| {
            let one_sided = [
                ("gt", *low, None),
                ("gte", *low, None),
                ("lt", *low, None),
                ("lte", *low, None),
            ];
            let two_sided = BOUNDS
                .iter()
                .filter(move |high| *high > low)
                .flat_map(move |high| [("gt", *low, Some(("lt", *high))), ("gte", *low, Some(("lte", *high)))]);
            one_sided.into_iter().chain(two_sided)
        });
        for (operator, bound, upper) in ranges {
            let passes = |price: f64, operator: &str, bound: f64| match operator {
                "gt" => price > bound,
                "gte" => price >= bound,
                "lt" => price < bound,
                _ => price <= bound,
            };
            let mut query = format!("price.number.{operator}={bound}");
            if let Some((operator, bound)) = upper {
                // sorted: the page walks the value index, the count beside it
                query.push_str(&format!("&price.number.{operator}={bound}&sort=-price.number"));
            }
            for (token, sees) in callers {
                let expected = self
                    .gadgets
                    .iter()
                    .flatten()
                    .filter(|(_, price, seen)| {
                        sees.contains(seen)
                            && passes(*price, operator, bound)
                            && upper.is_none_or(|(operator, bound)| passes(*price, operator, bound))
                    })
                    .count();
                let caller = token.map_or(
                    "anonymous",
                    |token| if token == self.owner { "owner" } else { "reader" },
                );
                assert_eq!(
                    self.count(token, &query).await,
                    expected as i64,
                    "{query} for the {caller}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_number_range_counts_exactly_from_tallies_for_every_caller_through_writes() {
    let mut shop = Gadgets::start().await;
    let plan = shop
        .app
        .plans_of(&[
            ("_type.string", "gadget"),
            ("price.number.gt", "-500"),
            ("price.number.lte", "990"),
        ])
        .await;
    assert!(plan.contains("number_tallies"), "{plan}");
    shop.check_every_range().await;

    // a gadget deleted, a price deleted, and a public gadget made private
    let (deleted, _, _) = shop.gadgets[3].take().unwrap();
    let (status, body) = shop
        .app
        .delete(&format!("/api/demo/entity/{deleted}"), &shop.owner)
        .await;
    assert_eq!(status, 200, "{body}");
    let (priced, _, _) = shop.gadgets[4].take().unwrap();
    shop.app.delete_first_value(&shop.owner, &priced, "price").await;
    let made_private = shop.gadgets[8].as_mut().unwrap();
    assert!(made_private.2 == Seen::Public);
    made_private.2 = Seen::Owner;
    let made_private = made_private.0.clone();
    shop.app
        .delete_first_value(&shop.owner, &made_private, "_sharing")
        .await;
    shop.app.settle().await;
    shop.check_every_range().await;
}
