//! Visibility decided on the value rows: filters, sorts and counts answered
//! from the value indexes alone see exactly what the entity rows would show
//! each caller, and follow every change of rights, sharing or views in the
//! write that makes it.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

struct Shelf {
    app: TestApp,
    owner: String,
    reader: String,
    reader_id: String,
    /// Books in creation order (see [`shelf`]).
    books: Vec<String>,
    title_definition: String,
    parent: String,
    book: String,
}

/// A public `book` type with `title` shown publicly, `code` in the domain
/// view and `price` undefined (private), and six books:
/// 0 public, two prices; 1 domain; 2 private with the reader as viewer;
/// 3 private; 4 public with the reader in `_noaccess`; 5 private, inheriting
/// the rights of a parent the reader views.
async fn shelf() -> Shelf {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader_id, key) = app.add_person(&owner, "Reader").await;
    let reader = app.token_for(&key).await;
    let book = app.create_type(&owner, "book").await;
    let sharing = |level: &str| json!({"type": "_sharing", "string": level});
    app.post(&format!("/api/demo/entity/{book}"), &owner, sharing("public"))
        .await;
    let title_definition = app
        .define(&owner, &book, "title", "string", json!([sharing("public")]))
        .await;
    app.define(&owner, &book, "code", "string", json!([sharing("domain")]))
        .await;
    let folder = app.create_type(&owner, "folder").await;
    let parent = app
        .create(&owner, &folder, json!([{"type": "_viewer", "reference": reader_id}]))
        .await;
    let viewer = json!({"type": "_viewer", "reference": reader_id});
    let noaccess = json!({"type": "_noaccess", "reference": reader_id});
    let rows = [
        json!([{"type": "title", "string": "A"}, {"type": "code", "string": "C0"}, {"type": "price", "number": 10},
               {"type": "price", "number": 50}, sharing("public")]),
        json!([{"type": "title", "string": "B"}, {"type": "code", "string": "C1"}, {"type": "price", "number": 20},
               sharing("domain")]),
        json!([{"type": "title", "string": "C"}, {"type": "price", "number": 30}, viewer]),
        json!([{"type": "title", "string": "D"}, {"type": "price", "number": 40}]),
        json!([{"type": "title", "string": "E"}, {"type": "price", "number": 60}, sharing("public"), noaccess]),
        json!([{"type": "title", "string": "F"}, {"type": "price", "number": 70},
               {"type": "_parent", "reference": parent}, {"type": "_inheritrights", "boolean": true}]),
    ];
    let mut books = Vec::new();
    for values in rows {
        books.push(app.create(&owner, &book, values).await);
    }
    Shelf {
        app,
        owner,
        reader,
        reader_id,
        books,
        title_definition,
        parent,
        book,
    }
}

impl Shelf {
    async fn answer(&self, token: Option<&str>, query: &str) -> Json {
        let path = format!("/api/demo/entity?_type.string=book&{query}");
        let (status, body) = self.app.call("GET", &path, token, None).await;
        assert_eq!(status, 200, "{query}: {body}");
        body
    }

    /// Indexes (into `books`) of the entities a query returns, in order.
    async fn matches(&self, token: Option<&str>, query: &str) -> Vec<usize> {
        let body = self.answer(token, query).await;
        let found: Vec<usize> = body["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| self.books.iter().position(|b| e["_id"] == b.as_str()).expect("a book"))
            .collect();
        if body["skip"] == 0 && found.len() < body["limit"].as_u64().unwrap() as usize {
            assert_eq!(body["count"], found.len(), "{query}: {body}");
        }
        found
    }
}

const NONE: [usize; 0] = [];

#[tokio::test]
async fn value_filters_answer_as_the_entity_rows_do_for_every_caller() {
    let shelf = shelf().await;
    let callers = [Some(shelf.owner.as_str()), Some(shelf.reader.as_str()), None];
    // A negation no entity fails leaves the matches as they are, but is
    // answered by testing each entity row: both answers must agree.
    for query in [
        "price.number.gt=5&sort=-price.number",
        "price.number.gt=15&sort=-price.number&limit=2",
        "price.number.gte=15&sort=-price.number&limit=2&skip=1",
        "price.number.lt=45&sort=price.number",
        "price.number.exists=true&sort=price.number&skip=1&limit=2",
        "title.string.regex=^[A-F]$",
        "title.string.gte=B&sort=-title.string",
        "code.string.in=C0,C1",
        "title.string.exists=true&price.number.gte=10&sort=-_id",
        "title.string=A&limit=0",
    ] {
        for token in callers {
            let fast = shelf.answer(token, query).await;
            let by_rows = shelf.answer(token, &format!("{query}&never.string.ne=x")).await;
            assert_eq!(fast, by_rows, "{query} as {token:?}");
        }
    }
    let owner = Some(shelf.owner.as_str());
    let reader = Some(shelf.reader.as_str());
    assert_eq!(
        shelf.matches(owner, "price.number.gt=5&sort=-price.number").await,
        [5, 4, 0, 3, 2, 1]
    );
    // `price` is private: the reader sees it where they view the book
    assert_eq!(
        shelf.matches(reader, "price.number.gt=5&sort=-price.number").await,
        [5, 2]
    );
    assert_eq!(shelf.matches(None, "price.number.gt=5").await, NONE);
    assert_eq!(shelf.matches(reader, "title.string.exists=true").await, [0, 1, 2, 5]);
    assert_eq!(shelf.matches(None, "title.string.exists=true").await, [0, 4]);
    assert_eq!(shelf.matches(reader, "code.string.exists=true").await, [0, 1]);
    assert_eq!(shelf.matches(None, "code.string.exists=true").await, NONE);
}

/// A caller's readable audiences are resolved once and bound into their
/// later list queries; rights no entity had before make a new audience, and
/// the caller's next query finds its entity all the same (the query checks
/// the database's audience stamp), for a person and for anonymous callers.
#[tokio::test]
async fn a_list_finds_the_entities_of_an_audience_added_since_the_callers_last_list() {
    let mut shelf = shelf().await;
    let reader = shelf.reader.clone();
    let by_price = "price.number.gt=5&sort=-price.number";
    let by_title = "title.string.exists=true&sort=title.string";
    assert_eq!(shelf.matches(Some(&reader), by_price).await, [5, 2]);
    assert_eq!(shelf.matches(None, by_title).await, [0, 4]);

    let (other, _) = shelf.app.add_person(&shelf.owner, "Other").await;
    let new_audiences = [
        // domain-shared, and viewed by the reader: its private price too
        json!([{"type": "title", "string": "G"}, {"type": "price", "number": 80},
               {"type": "_sharing", "string": "domain"}, {"type": "_viewer", "reference": shelf.reader_id}]),
        // public, and viewed by someone new: its public title to anyone
        json!([{"type": "title", "string": "H"}, {"type": "_sharing", "string": "public"},
               {"type": "_viewer", "reference": other}]),
    ];
    for values in new_audiences {
        let book = shelf.app.create(&shelf.owner, &shelf.book, values).await;
        shelf.books.push(book);
    }
    assert_eq!(shelf.matches(Some(&reader), by_price).await, [6, 5, 2]);
    assert_eq!(shelf.matches(None, by_title).await, [0, 4, 7]);
}

/// A caller who may read more audiences than a statement binds as ids has
/// them found in the statement itself: the answer is the same, and follows
/// new audiences as well.
#[tokio::test]
async fn a_caller_who_may_read_many_audiences_finds_every_entity_of_them() {
    let shelf = shelf().await;
    let app = &shelf.app;
    let folder = app.create_type(&shelf.owner, "folder").await;
    let viewed_by_the_reader_and = |other: &str| {
        json!([{"type": "price", "number": 100}, {"type": "_viewer", "reference": shelf.reader_id},
               {"type": "_viewer", "reference": other}])
    };
    for _ in 0..70 {
        // each book its own audience: the reader and a folder of its own as viewers
        let other = app.create(&shelf.owner, &folder, json!([])).await;
        app.create(&shelf.owner, &shelf.book, viewed_by_the_reader_and(&other))
            .await;
    }
    let count = |body: Json| body["count"].as_i64().unwrap();
    let query = "price.number.gte=100&limit=1";
    assert_eq!(count(shelf.answer(Some(&shelf.reader), query).await), 70);
    let other = app.create(&shelf.owner, &folder, json!([])).await;
    app.create(&shelf.owner, &shelf.book, viewed_by_the_reader_and(&other))
        .await;
    assert_eq!(count(shelf.answer(Some(&shelf.reader), query).await), 71);
    assert_eq!(count(shelf.answer(None, query).await), 0);
}

#[tokio::test]
async fn a_narrowed_definition_hides_its_values_from_filters_in_the_write_that_narrows_it() {
    let shelf = shelf().await;
    assert_eq!(shelf.matches(None, "title.string.gte=A").await, [0, 4]);
    let (status, body) = shelf
        .app
        .post(
            &format!("/api/demo/entity/{}", shelf.title_definition),
            &shelf.owner,
            json!({"type": "_sharing", "string": "domain"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(shelf.matches(None, "title.string.gte=A").await, NONE);
    let reader = Some(shelf.reader.as_str());
    assert_eq!(shelf.matches(reader, "title.string.gte=A").await, [0, 1, 2, 5]);
}

#[tokio::test]
async fn rights_changes_reach_the_value_rows_in_the_write_that_makes_them() {
    let shelf = shelf().await;
    let reader = Some(shelf.reader.as_str());
    let query = "price.number.gt=5&sort=price.number";
    assert_eq!(shelf.matches(reader, query).await, [2, 5]);
    // the parent's viewer goes: its inheriting child follows at once
    let (_, parent) = shelf
        .app
        .get(&format!("/api/demo/entity/{}", shelf.parent), &shelf.owner)
        .await;
    let viewer = parent["entity"]["_viewer"][0]["_id"].as_str().unwrap().to_owned();
    let (status, _) = shelf
        .app
        .delete(&format!("/api/demo/property/{viewer}"), &shelf.owner)
        .await;
    assert_eq!(status, 200);
    assert_eq!(shelf.matches(reader, query).await, [2]);
    // `_noaccess` on a book the reader views
    let (status, _) = shelf
        .app
        .post(
            &format!("/api/demo/entity/{}", shelf.books[2]),
            &shelf.owner,
            json!({"type": "_noaccess", "reference": shelf.reader_id}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(shelf.matches(reader, query).await, NONE);
    // a private book made public shows its public values to everyone
    shelf
        .app
        .post(
            &format!("/api/demo/entity/{}", shelf.books[3]),
            &shelf.owner,
            json!({"type": "_sharing", "string": "public"}),
        )
        .await;
    assert_eq!(shelf.matches(None, "title.string.exists=true").await, [0, 3, 4]);
    assert_eq!(shelf.matches(None, "price.number.exists=true").await, NONE);
}

#[tokio::test]
async fn whole_type_counts_are_exact_for_every_caller_through_creates_deletes_and_rights_changes() {
    let shelf = shelf().await;
    let callers = [Some(shelf.owner.as_str()), Some(shelf.reader.as_str()), None];
    let counts = || async {
        let mut counts = Vec::new();
        for token in callers {
            // full pages: the count is asked for, from the tallies
            for query in [
                "_type.string=book&limit=1",
                "_type.string.in=book,folder&limit=1",
                "limit=1",
            ] {
                let path = format!("/api/demo/entity?{query}");
                let (status, whole) = shelf.app.call("GET", &path, token, None).await;
                assert_eq!(status, 200, "{whole}");
                let (_, by_rows) = shelf
                    .app
                    .call("GET", &format!("{path}&never.string.ne=x"), token, None)
                    .await;
                assert_eq!(whole["count"], by_rows["count"], "{query} as {token:?}");
                if query != "limit=1" {
                    counts.push(whole["count"].as_u64().unwrap());
                }
            }
        }
        counts
    };
    // owner: 6 books (and 6 with the folder); reader: 4 and 5; anonymous: 2 and 2
    assert_eq!(counts().await, [6, 7, 4, 5, 2, 2]);
    let (status, _) = shelf
        .app
        .delete(&format!("/api/demo/entity/{}", shelf.books[0]), &shelf.owner)
        .await;
    assert_eq!(status, 200);
    assert_eq!(counts().await, [5, 6, 3, 4, 1, 1]);
    shelf
        .app
        .post(
            &format!("/api/demo/entity/{}", shelf.books[3]),
            &shelf.owner,
            json!({"type": "_viewer", "reference": shelf.reader_id}),
        )
        .await;
    assert_eq!(counts().await, [5, 6, 4, 5, 1, 1]);
    let (_, parent) = shelf
        .app
        .get(&format!("/api/demo/entity/{}", shelf.parent), &shelf.owner)
        .await;
    let viewer = parent["entity"]["_viewer"][0]["_id"].as_str().unwrap().to_owned();
    shelf
        .app
        .delete(&format!("/api/demo/property/{viewer}"), &shelf.owner)
        .await;
    // the parent folder and its inheriting book leave the reader's counts
    assert_eq!(counts().await, [5, 6, 3, 3, 1, 1]);
}

/// The row version of each live value of `entity`, with its property, in order.
async fn value_versions(app: &TestApp, entity: &str) -> Vec<(String, String)> {
    use diesel::sql_types::Text;
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Version {
        #[diesel(sql_type = Text)]
        prop: String,
        #[diesel(sql_type = Text)]
        version: String,
    }
    let mut conn = app.pool.get().await.unwrap();
    let rows: Vec<Version> = diesel::sql_query(
        "SELECT prop, xmin::text AS version FROM property_values \
         WHERE db = 'demo' AND entity_id = $1 AND deleted_at IS NULL AND prop NOT LIKE '\\_%' ORDER BY prop, id",
    )
    .bind::<Text, _>(entity)
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter().map(|row| (row.prop, row.version)).collect()
}

#[tokio::test]
async fn a_narrowed_definition_rewrites_the_visibility_of_its_own_values_only() {
    let shelf = shelf().await;
    let reader = Some(shelf.reader.as_str());
    let coded = shelf.matches(reader, "code.string.gte=C").await;
    let before = value_versions(&shelf.app, &shelf.books[0]).await;
    let narrow = json!({"type": "_sharing", "string": "domain"});
    let path = format!("/api/demo/entity/{}", shelf.title_definition);
    let (status, body) = shelf.app.post(&path, &shelf.owner, narrow).await;
    assert_eq!(status, 200, "{body}");
    let after = value_versions(&shelf.app, &shelf.books[0]).await;

    let props: Vec<&str> = before.iter().map(|(prop, _)| prop.as_str()).collect();
    assert_eq!(props, ["code", "price", "price", "title"]);
    for ((prop, was), (_, is)) in before.iter().zip(&after) {
        assert_eq!(prop == "title", was != is, "{prop}: {was} → {is}");
    }
    assert_eq!(shelf.matches(None, "title.string.gte=A").await, NONE);
    assert_eq!(shelf.matches(reader, "code.string.gte=C").await, coded);
}
