//! The query language of `GET /api/{db}/entity`, rule by rule and operator by
//! value field, against real PostgreSQL.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

struct Library {
    app: TestApp,
    token: String,
    /// Book ids in creation order: dune, emma, ulysses, zed (no price, no author).
    books: Vec<String>,
}

async fn library() -> Library {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let public = json!({"type": "_sharing", "string": "public"});
    app.post(&format!("/api/demo/entity/{book}"), &token, public.clone())
        .await;
    app.define(
        &token,
        &book,
        "title",
        "string",
        json!([{"type": "search", "boolean": true}, {"type": "multilingual", "boolean": true}, public]),
    )
    .await;
    app.define(&token, &book, "note", "text", json!([])).await;
    app.define(
        &token,
        &book,
        "secret",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    app.define(
        &token,
        &book,
        "author",
        "reference",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    let person = app.find(&token, "entity", "person").await;
    let herbert = app
        .create(&token, &person, json!([{"type": "name", "string": "Frank Herbert"}]))
        .await;
    let austen = app
        .create(&token, &person, json!([{"type": "name", "string": "Jane Austen"}]))
        .await;
    let rows = [
        json!([{"type": "title", "string": "Dune"}, {"type": "price", "number": 10}, {"type": "published", "date": "1965-08-01"},
               {"type": "at", "datetime": "2020-01-01T10:00:00Z"}, {"type": "instock", "boolean": true}, {"type": "author", "reference": herbert},
               {"type": "cover", "filename": "dune.jpg", "filesize": 1000, "filetype": "image/jpeg"}, {"type": "secret", "string": "hidden-word"},
               {"type": "note", "string": "line one\nline two"}, {"type": "_sharing", "string": "public"}, {"type": "code", "string": "B-1"}]),
        json!([{"type": "title", "string": "Emma", "language": "en"}, {"type": "price", "number": 20}, {"type": "published", "date": "1815-12-23"},
               {"type": "at", "datetime": "2021-06-01T00:00:00Z"}, {"type": "instock", "boolean": false}, {"type": "author", "reference": austen},
               {"type": "cover", "filename": "emma.png", "filesize": 5000, "filetype": "image/png"}, {"type": "code", "string": "B-2"}]),
        json!([{"type": "title", "string": "Ulysses"}, {"type": "price", "number": 30}, {"type": "price", "number": 5}, {"type": "published", "date": "1922-02-02"},
               {"type": "instock", "boolean": true}, {"type": "code", "string": "B-3"}]),
        json!([{"type": "title", "string": "Zed"}, {"type": "code", "string": "B-4"}]),
    ];
    let mut books = Vec::new();
    for values in rows {
        books.push(app.create(&token, &book, values).await);
    }
    Library { app, token, books }
}

impl Library {
    /// A list query over the books for a caller with `token` (`None`: anonymous).
    async fn query_as(&self, token: Option<&str>, query: &str) -> (u16, Json) {
        let path = format!("/api/demo/entity?_type.string=book&{query}");
        self.app.call("GET", &path, token, None).await
    }

    async fn query(&self, query: &str) -> (u16, Json) {
        self.query_as(Some(&self.token), query).await
    }

    /// Indexes (into `books`) of the entities a query returns to the caller
    /// with `token`, in order.
    async fn matches_as(&self, token: Option<&str>, query: &str) -> Vec<usize> {
        let (status, body) = self.query_as(token, query).await;
        assert_eq!(status, 200, "{query}: {body}");
        body["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| self.books.iter().position(|b| e["_id"] == b.as_str()).expect("a book"))
            .collect()
    }

    /// Indexes (into `books`) of the entities a query returns to the owner, in order.
    async fn matches(&self, query: &str) -> Vec<usize> {
        self.matches_as(Some(&self.token), query).await
    }

    /// Asserts that a regex filter on `prop` is refused with the full `Invalid regex` body.
    async fn assert_invalid_regex(&self, prop: &str, value: &str) {
        let (status, body) = self.query(&format!("{prop}.string.regex={}", urlencode(value))).await;
        assert_eq!(
            (status, body),
            (
                400,
                json!({"status": 400, "error": "invalid_regex", "message": "Invalid regex"})
            ),
            "{prop}: {} characters of {value:?}",
            value.chars().count()
        );
    }

    async fn error(&self, query: &str) -> (u16, String) {
        let (status, body) = self.query(query).await;
        (status, body["message"].as_str().unwrap_or_default().to_owned())
    }
}

#[tokio::test]
async fn string_operators() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string=Dune").await, [0]);
    assert_eq!(lib.matches("title.string.in=Dune,Zed").await, [0, 3]);
    assert_eq!(lib.matches("title.string.gt=Emma").await, [2, 3]);
    assert_eq!(lib.matches("title.string.gte=Emma").await, [1, 2, 3]);
    assert_eq!(lib.matches("title.string.lt=Emma").await, [0]);
    assert_eq!(lib.matches("title.string.lte=Emma").await, [0, 1]);
    assert_eq!(lib.matches("title.string.ne=Dune").await, [1, 2, 3]);
    assert_eq!(lib.matches("title.string.exists=true").await, [0, 1, 2, 3]);
}

#[tokio::test]
async fn ne_also_matches_entities_without_the_property() {
    let lib = library().await;
    assert_eq!(lib.matches("price.number.ne=10").await, [1, 2, 3]);
    assert_eq!(lib.matches("note.string.ne=x").await, [0, 1, 2, 3]);
}

#[tokio::test]
async fn exists_takes_true_and_anything_else_means_false() {
    let lib = library().await;
    assert_eq!(lib.matches("price.number.exists=true").await, [0, 1, 2]);
    assert_eq!(lib.matches("price.number.exists=false").await, [3]);
    assert_eq!(lib.matches("price.number.exists=yes").await, [3]);
}

#[tokio::test]
async fn regex_pattern_and_flags() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string.regex=/^u/i").await, [2]);
    assert_eq!(lib.matches("title.string.regex=/^u/").await, Vec::<usize>::new());
    assert_eq!(
        lib.matches("title.string.regex=/^u/ig").await,
        [2],
        "other flags are dropped"
    );
    assert_eq!(
        lib.matches("title.string.regex=mm").await,
        [1],
        "a value without slashes is the pattern"
    );
    assert_eq!(lib.matches("note.string.regex=/^line two$/").await, Vec::<usize>::new());
    assert_eq!(
        lib.matches("note.string.regex=/^line two$/m").await,
        [0],
        "m: ^ and $ at line breaks"
    );
    assert_eq!(lib.matches("note.string.regex=/one.line/").await, Vec::<usize>::new());
    assert_eq!(
        lib.matches("note.string.regex=/one.line/s").await,
        [0],
        "s: . matches a newline"
    );
}

#[tokio::test]
async fn regex_flag_x_or_invalid_pattern_is_400_invalid_regex() {
    let lib = library().await;
    for bad in ["/a/x", "/(a/", "/a{99999}/", &format!("/{}/", "a".repeat(600))] {
        assert_eq!(
            lib.error(&format!("title.string.regex={}", urlencode(bad))).await,
            (400, "Invalid regex".into()),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn reference_operators_and_name_as_string() {
    let lib = library().await;
    let (_, dune) = lib
        .app
        .get(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    let herbert = dune["entity"]["author"][0]["reference"].as_str().unwrap().to_owned();
    assert_eq!(lib.matches(&format!("author.reference={herbert}")).await, [0]);
    assert_eq!(
        lib.matches(&format!("author.reference.in={herbert},{}", lib.app.person))
            .await,
        [0]
    );
    assert_eq!(lib.matches("author.reference.exists=true").await, [0, 1]);
    assert_eq!(lib.matches("author.string=Jane%20Austen").await, [1]);
    assert_eq!(lib.error("author.reference=nope").await, (400, "Invalid ID".into()));
    assert_eq!(lib.error("author.reference.in=nope").await, (400, "Invalid ID".into()));
}

/// A list is built on what the server last found of its properties (here:
/// that `code` holds no reference) and checks it in the same statement: a
/// reference added since is matched by its target's name at once.
#[tokio::test]
async fn a_string_filter_matches_a_reference_by_name_from_the_first_list_after_one_is_added() {
    let lib = library().await;
    assert_eq!(lib.matches("code.string=Frank%20Herbert").await, Vec::<usize>::new());
    assert_eq!(lib.matches("code.string=B-4").await, [3]);
    let (_, dune) = lib
        .app
        .get(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    let herbert = dune["entity"]["author"][0]["reference"].as_str().unwrap().to_owned();
    let (status, body) = lib
        .app
        .post(
            &format!("/api/demo/entity/{}", lib.books[3]),
            &lib.token,
            json!({"type": "code", "reference": herbert}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(lib.matches("code.string=Frank%20Herbert").await, [3]);
    assert_eq!(lib.matches("code.string=B-4").await, [3]);
}

#[tokio::test]
async fn number_operators() {
    let lib = library().await;
    assert_eq!(lib.matches("price.number=20").await, [1]);
    assert_eq!(lib.matches("price.number.gt=10").await, [1, 2]);
    assert_eq!(lib.matches("price.number.gte=10").await, [0, 1, 2]);
    assert_eq!(
        lib.matches("price.number.lt=10").await,
        [2],
        "any value of a multi-valued property"
    );
    assert_eq!(lib.matches("price.number.lte=10").await, [0, 2]);
    assert_eq!(lib.matches("price.number.in=10,30").await, [0, 2]);
    assert_eq!(lib.error("price.number=ten").await.0, 400);
}

#[tokio::test]
async fn boolean_operators_and_anything_but_true_is_false() {
    let lib = library().await;
    assert_eq!(lib.matches("instock.boolean=true").await, [0, 2]);
    assert_eq!(lib.matches("instock.boolean=false").await, [1]);
    assert_eq!(lib.matches("instock.boolean=yes").await, [1]);
    assert_eq!(lib.matches("instock.boolean.in=true,false").await, [0, 1, 2]);
    assert_eq!(lib.matches("instock.boolean.exists=true").await, [0, 1, 2]);
}

#[tokio::test]
async fn date_operators_with_days_iso_and_milliseconds() {
    let lib = library().await;
    assert_eq!(lib.matches("published.date=1965-08-01").await, [0]);
    assert_eq!(lib.matches("published.date.gt=1900-01-01").await, [0, 2]);
    assert_eq!(lib.matches("published.date.gte=1922-02-02").await, [0, 2]);
    assert_eq!(lib.matches("published.date.lt=1922-02-02").await, [1]);
    assert_eq!(lib.matches("published.date.lte=1922-02-02").await, [1, 2]);
    assert_eq!(lib.matches("published.date.in=1965-08-01,1815-12-23").await, [0, 1]);
    assert_eq!(lib.matches("published.date.exists=true").await, [0, 1, 2]);
    // 1965-08-01T00:00:00Z in milliseconds, and as an ISO date-time
    assert_eq!(lib.matches("published.date=-139449600000").await, [0]);
    assert_eq!(lib.matches("published.date=1965-08-01T00:00:00Z").await, [0]);
}

#[tokio::test]
async fn datetime_operators_with_iso_and_milliseconds() {
    let lib = library().await;
    assert_eq!(lib.matches("at.datetime=2020-01-01T10:00:00Z").await, [0]);
    assert_eq!(lib.matches("at.datetime=1577872800000").await, [0]);
    assert_eq!(lib.matches("at.datetime.gt=2020-01-01T10:00:00Z").await, [1]);
    assert_eq!(lib.matches("at.datetime.gte=2020-01-01T10:00:00Z").await, [0, 1]);
    assert_eq!(lib.matches("at.datetime.lt=2021-01-01").await, [0]);
    assert_eq!(lib.matches("at.datetime.lte=2021-06-01T00:00:00Z").await, [0, 1]);
    assert_eq!(lib.matches("at.datetime.in=2021-06-01T00:00:00Z").await, [1]);
    assert_eq!(lib.matches("at.datetime.exists=false").await, [2, 3]);
}

#[tokio::test]
async fn file_fields_filesize_and_strings() {
    let lib = library().await;
    assert_eq!(lib.matches("cover.filesize=1000").await, [0]);
    assert_eq!(lib.matches("cover.filesize.gt=1000").await, [1]);
    assert_eq!(lib.matches("cover.filesize.gte=1000").await, [0, 1]);
    assert_eq!(lib.matches("cover.filesize.lt=5000").await, [0]);
    assert_eq!(lib.matches("cover.filesize.lte=5000").await, [0, 1]);
    assert_eq!(lib.matches("cover.filesize.in=5000,7").await, [1]);
    assert_eq!(lib.matches("cover.filesize.exists=false").await, [2, 3]);
    assert_eq!(lib.matches("cover.filetype=image/jpeg").await, [0]);
    assert_eq!(lib.matches("cover.filename.regex=/\\.PNG$/i").await, [1]);
    assert_eq!(lib.matches("cover.filetype.in=image/png,image/gif").await, [1]);
}

#[tokio::test]
async fn language_is_filtered_as_a_string() {
    let lib = library().await;
    assert_eq!(lib.matches("title.language=en").await, [1]);
    assert_eq!(lib.matches("title.language.exists=true").await, [1]);
}

#[tokio::test]
async fn unknown_operator_is_ignored_and_matches_exactly() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string.near=Dune").await, [0]);
    assert_eq!(lib.matches("instock.boolean.gt=false").await, [1]);
}

#[tokio::test]
async fn several_filters_must_all_match() {
    let lib = library().await;
    assert_eq!(lib.matches("instock.boolean=true&price.number.gt=10").await, [2]);
    assert_eq!(
        lib.matches("instock.boolean=true&title.string=Emma").await,
        Vec::<usize>::new()
    );
}

#[tokio::test]
async fn type_string_filters_by_the_type_name() {
    let lib = library().await;
    let (_, body) = lib.app.get("/api/demo/entity?_type.string=book", &lib.token).await;
    assert_eq!(body["count"], 4);
    let (_, body) = lib.app.get("/api/demo/entity?_type.string=Book", &lib.token).await;
    assert_eq!(body["count"], 0);
}

#[tokio::test]
async fn sort_by_several_keys_descending_with_minus() {
    let lib = library().await;
    assert_eq!(lib.matches("sort=title.string").await, [0, 1, 2, 3]);
    assert_eq!(lib.matches("sort=-title.string").await, [3, 2, 1, 0]);
    // ascending by the smallest value, descending by the largest; missing last
    assert_eq!(lib.matches("sort=price.number").await, [2, 0, 1, 3]);
    assert_eq!(lib.matches("sort=-price.number").await, [2, 1, 0, 3]);
    assert_eq!(lib.matches("sort=-instock.boolean,title.string").await, [0, 2, 1, 3]);
    assert_eq!(lib.matches("sort=-_id").await, [3, 2, 1, 0]);
    assert_eq!(lib.matches("").await, [0, 1, 2, 3], "default: _id ascending");
}

#[tokio::test]
async fn limit_skip_and_count_counts_all_matches() {
    let lib = library().await;
    let (_, body) = lib.query("sort=title.string&limit=2&skip=1").await;
    assert_eq!(
        (body["count"].as_i64(), body["limit"].as_i64(), body["skip"].as_i64()),
        (Some(4), Some(2), Some(1))
    );
    assert_eq!(lib.matches("sort=title.string&limit=2&skip=1").await, [1, 2]);
    // past the last match, in `_id` order or by a value: no rows, every match counted
    for sort in ["_id", "title.string"] {
        let (_, body) = lib.query(&format!("sort={sort}&limit=2&skip=10")).await;
        assert_eq!(
            (body["count"].as_i64(), body["entities"].as_array().map(Vec::len)),
            (Some(4), Some(0))
        );
    }
}

#[tokio::test]
async fn q_matches_parts_of_words_case_insensitively_and_every_word() {
    let lib = library().await;
    assert_eq!(lib.matches("q=UN").await, [0]);
    assert_eq!(lib.matches("q=ly").await, [2]);
    assert_eq!(lib.matches("q=dune%20herb").await, [0], "a searchable reference's name");
    assert_eq!(
        lib.matches("q=dune%20austen").await,
        Vec::<usize>::new(),
        "every word must match"
    );
    assert_eq!(
        lib.matches("q=B-1").await,
        Vec::<usize>::new(),
        "code is not searchable"
    );
    assert_eq!(
        lib.matches("q=%25").await,
        Vec::<usize>::new(),
        "LIKE wildcards are literal"
    );
}

#[tokio::test]
async fn q_counts_only_the_first_20_characters_of_a_word() {
    let lib = library().await;
    lib.app
        .post(
            &format!("/api/demo/entity/{}", lib.books[3]),
            &lib.token,
            json!({"type": "title", "string": "abcdefghijklmnopqrstuvwxyz"}),
        )
        .await;
    assert_eq!(lib.matches("q=abcdefghijklmnopqrst-and-more").await, [3]);
}

#[tokio::test]
async fn search_index_follows_a_referenced_entity_rename() {
    let lib = library().await;
    let (_, dune) = lib
        .app
        .get(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    let herbert = dune["entity"]["author"][0]["reference"].as_str().unwrap().to_owned();
    let (_, author) = lib.app.get(&format!("/api/demo/entity/{herbert}"), &lib.token).await;
    let name = author["entity"]["name"][0]["_id"].clone();
    lib.app
        .post(
            &format!("/api/demo/entity/{herbert}"),
            &lib.token,
            json!({"type": "name", "string": "Brian Herbert", "_id": name}),
        )
        .await;
    assert_eq!(lib.matches("q=brian").await, [0]);
    assert_eq!(lib.matches("q=frank").await, Vec::<usize>::new());
    assert_eq!(lib.matches("author.string=Brian%20Herbert").await, [0]);
}

#[tokio::test]
async fn anonymous_q_searches_only_the_public_index() {
    let lib = library().await;
    let (status, body) = lib.app.call("GET", "/api/demo/entity?q=dune", None, None).await;
    assert_eq!((status, body["count"].as_i64()), (200, Some(1)));
    // `secret` is searchable but not public: private index only
    let (_, body) = lib.app.call("GET", "/api/demo/entity?q=hidden", None, None).await;
    assert_eq!(body["count"], 0);
    assert_eq!(lib.matches("q=hidden").await, [0]);
    // the anonymous view of the public book shows only public values
    let (_, body) = lib
        .app
        .call("GET", &format!("/api/demo/entity/{}", lib.books[0]), None, None)
        .await;
    let entity = body["entity"].as_object().unwrap();
    assert!(entity.contains_key("title") && entity.contains_key("_type") && entity.contains_key("_sharing"));
    assert!(!entity.contains_key("secret") && !entity.contains_key("price") && !entity.contains_key("_owner"));
    // filters see only the view too
    let (_, body) = lib
        .app
        .call("GET", "/api/demo/entity?secret.string=hidden-word", None, None)
        .await;
    assert_eq!(body["count"], 0);
}

#[tokio::test]
async fn props_returns_the_listed_properties_and_always_id() {
    let lib = library().await;
    let (_, body) = lib.query("title.string=Dune&props=title,price").await;
    let entity = body["entities"][0].as_object().unwrap();
    let mut keys: Vec<&str> = entity.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["_id", "price", "title"]);
}

#[tokio::test]
async fn group_returns_one_row_per_value_with_count_and_props_of_the_first() {
    let lib = library().await;
    let (status, body) = lib
        .query("group=instock.boolean&props=instock,title&limit=1&skip=5")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 3, "true, false and missing");
    let rows = body["entities"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "limit and skip are ignored");
    for row in rows {
        assert!(row.get("_id").is_none());
    }
    let in_stock = rows.iter().find(|r| r["instock"][0]["boolean"] == true).unwrap();
    assert_eq!(in_stock["_count"], 2);
    assert_eq!(in_stock["title"][0]["string"], "Dune", "the first entity of the group");
    // grouped values appear only if listed in props
    let (_, body) = lib.query("group=instock.boolean&props=title").await;
    assert!(
        body["entities"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.get("instock").is_none())
    );
    let (_, body) = lib.query("group=instock.boolean,price.number").await;
    assert_eq!(body["count"], 4);
}

#[tokio::test]
async fn group_puts_a_multi_valued_entity_in_the_group_of_its_smallest_value() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    for prices in [json!([9, 10]), json!([9]), json!([10])] {
        let values: Vec<Json> = prices
            .as_array()
            .unwrap()
            .iter()
            .map(|price| json!({"type": "price", "number": price}))
            .collect();
        app.create(&token, &item, Json::Array(values)).await;
    }
    let (status, body) = app
        .get(
            "/api/demo/entity?_type.string=item&group=price.number&props=price",
            &token,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // 9 and 10 compare as numbers: [9, 10] joins [9], not [10]
    let sizes: Vec<(Json, Json)> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["price"][0]["number"].clone(), row["_count"].clone()))
        .collect();
    assert_eq!(sizes, [(json!(9), json!(2)), (json!(10), json!(1))], "{body}");
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn a_query_over_the_statement_timeout_is_503_query_timeout_with_retry_after() {
    let app = support::TestApp::start_with(
        support::Storage::Local,
        &[("database.statement_timeout_ms", "100".to_owned())],
    )
    .await;
    let token = app.owner_token().await;
    // 100,000 entities with two values each, written in bulk on a connection
    // of the test's own, without a time limit: keying each entity by its
    // largest value and sorting them all takes far longer.
    let mut conn = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&app.database_url)
        .await
        .unwrap();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "WITH n AS (SELECT i, 'bulk' || lpad(i::text, 20, '0') AS id FROM generate_series(1, 100000) i), \
             e AS (INSERT INTO entities (db, id, created_at, viewers) \
                   SELECT 'demo', id, now(), ARRAY[$1] FROM n RETURNING id) \
             INSERT INTO property_values (db, id, entity_id, prop, number, created_at) \
             SELECT 'demo', v.id || e.id, e.id, 'n', n.i + v.shift, now() \
             FROM e JOIN n ON n.id = e.id CROSS JOIN (VALUES ('v', 0), ('w', 0.5)) AS v(id, shift)",
        )
        .bind::<diesel::sql_types::Text, _>(&app.person),
        &mut conn,
    )
    .await
    .unwrap();
    // as autovacuum would, so the planner knows the tables' new sizes
    diesel_async::RunQueryDsl::execute(diesel::sql_query("ANALYZE entities, property_values"), &mut conn)
        .await
        .unwrap();
    support::assert_slow_list_times_out(&app.http, &app.url, &token).await;
    // the server is not stuck: the next request is served
    let (status, body) = app.get(&format!("/api/demo/entity/{}", app.person), &token).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn conditions_on_one_property_and_field_hold_for_one_and_the_same_value() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let inside = app
        .create(&token, &item, json!([{"type": "price", "number": 15}]))
        .await;
    // one value below the range and one above: no single value is inside
    app.create(
        &token,
        &item,
        json!([{"type": "price", "number": 5}, {"type": "price", "number": 50}]),
    )
    .await;
    let (status, body) = app
        .get("/api/demo/entity?price.number.gte=10&price.number.lt=20", &token)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 1, "{body}");
    assert_eq!(body["entities"][0]["_id"], inside.as_str());
}

// Answers are cached per process until a write changes their database
// (`database.answer_cache_bytes`); a cached answer is never stale.

#[tokio::test]
async fn a_list_answer_follows_every_write_that_changes_it() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string=Dune").await, [0]);
    assert_eq!(lib.matches("title.string=Dune").await, [0], "asked again");
    let zed = &lib.books[3];
    lib.app
        .post(
            &format!("/api/demo/entity/{zed}"),
            &lib.token,
            json!({"type": "title", "string": "Dune"}),
        )
        .await;
    assert_eq!(lib.matches("title.string=Dune").await, [0, 3]);
    let (status, _) = lib
        .app
        .delete(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    assert_eq!(status, 200);
    assert_eq!(lib.matches("title.string=Dune").await, [3]);
    let (_, body) = lib.query("title.string=Dune").await;
    assert_eq!(body["count"], 1, "{body}");
}

#[tokio::test]
async fn a_list_answer_follows_a_rights_change() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&key).await;
    let item = app.create_type(&owner, "item").await;
    let secret = app
        .create(&owner, &item, json!([{"type": "name", "string": "secret"}]))
        .await;
    let visible = || async {
        let (status, body) = app
            .get("/api/demo/entity?name.string=secret&_type.string=item", &reader_token)
            .await;
        assert_eq!(status, 200, "{body}");
        body["count"].clone()
    };
    assert_eq!(visible().await, 0);
    app.post(
        &format!("/api/demo/entity/{secret}"),
        &owner,
        json!({"type": "_viewer", "reference": reader}),
    )
    .await;
    assert_eq!(visible().await, 1);
}

#[tokio::test]
async fn each_caller_gets_the_answer_of_their_own_view() {
    let lib = library().await;
    let path = "/api/demo/entity?_type.string=book&sort=_id";
    let (_, owners) = lib.app.get(path, &lib.token).await;
    assert_eq!(owners["count"], 4, "{owners}");
    let (status, anonymous) = lib.app.call("GET", path, None, None).await;
    assert_eq!(status, 200, "{anonymous}");
    assert_eq!(anonymous["count"], 1, "only Dune is public: {anonymous}");
    assert!(!anonymous.to_string().contains("hidden-word"));
}

#[tokio::test]
async fn with_the_answer_cache_off_every_answer_is_computed() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[("database.answer_cache_bytes", "0".to_owned())],
    )
    .await;
    assert!(app.state.answers.is_none());
    let owner = app.owner_token().await;
    let item = app.create_type(&owner, "item").await;
    let count = || async {
        let (status, body) = app.get("/api/demo/entity?_type.string=item", &owner).await;
        assert_eq!(status, 200, "{body}");
        body["count"].clone()
    };
    assert_eq!(count().await, 0);
    app.create(&owner, &item, json!([])).await;
    assert_eq!(count().await, 1);
    let (status, body) = app.get("/api/nosuchdb/entity", &owner).await;
    assert_eq!((status, body["message"].as_str()), (404, Some("Database not found")));
}

// Every operator of the spec's table on every value field, the rules of the
// query syntax one by one, and the failure bodies.

impl Library {
    /// The `author` reference of book `index`.
    async fn author_of(&self, index: usize) -> String {
        let (status, body) = self
            .app
            .get(&format!("/api/demo/entity/{}", self.books[index]), &self.token)
            .await;
        assert_eq!(status, 200, "{body}");
        body["entity"]["author"][0]["reference"].as_str().unwrap().to_owned()
    }
}

const NONE: [usize; 0] = [];

#[tokio::test]
async fn string_exists_false_and_other_values_mean_false() {
    let lib = library().await;
    assert_eq!(lib.matches("note.string.exists=false").await, [1, 2, 3]);
    assert_eq!(lib.matches("note.string.exists=true").await, [0]);
    assert_eq!(lib.matches("note.string.exists=TRUE").await, [1, 2, 3]);
    assert_eq!(lib.matches("note.string.exists=1").await, [1, 2, 3]);
}

#[tokio::test]
async fn text_values_are_filtered_by_string() {
    let lib = library().await;
    assert_eq!(lib.matches("note.string=line%20one%0Aline%20two").await, [0]);
    assert_eq!(lib.matches("note.string=line%20one").await, NONE);
    assert_eq!(lib.matches("note.string.in=x,line%20one%0Aline%20two").await, [0]);
}

#[tokio::test]
async fn counter_values_are_filtered_by_string_and_by_their_number() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let ticket = app.create_type(&token, "ticket").await;
    app.define(&token, &ticket, "no", "counter", json!([])).await;
    let mut tickets = Vec::new();
    for string in ["INV-7", "INV-42"] {
        tickets.push(
            app.create(
                &token,
                &ticket,
                json!([{"type": "no", "counter": true, "string": string}]),
            )
            .await,
        );
    }
    let found = |query: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            let (status, body) = app
                .get(&format!("/api/demo/entity?_type.string=ticket&{query}"), token)
                .await;
            assert_eq!(status, 200, "{query}: {body}");
            body["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["_id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(found("no.string=INV-42").await, [tickets[1].clone()]);
    assert_eq!(found("no.string.regex=/^inv-[0-9]$/i").await, [tickets[0].clone()]);
    assert_eq!(found("no.number=42").await, [tickets[1].clone()]);
    assert_eq!(found("no.number.lt=42").await, [tickets[0].clone()]);
    assert_eq!(found("no.number.in=7,42").await, tickets);
}

#[tokio::test]
async fn reference_exact_in_with_several_ids_and_exists_false() {
    let lib = library().await;
    let herbert = lib.author_of(0).await;
    let austen = lib.author_of(1).await;
    assert_eq!(lib.matches(&format!("author.reference={austen}")).await, [1]);
    assert_eq!(
        lib.matches(&format!("author.reference.in={herbert},{austen}")).await,
        [0, 1]
    );
    assert_eq!(lib.matches("author.reference.exists=false").await, [2, 3]);
    assert_eq!(lib.matches("author.reference.exists=no").await, [2, 3]);
    // a well-formed id that nothing references
    assert_eq!(lib.matches("author.reference=5f1a2b3c4d5e6f7a8b9c0d1e").await, NONE);
}

#[tokio::test]
async fn number_exact_ne_in_and_exists_false() {
    let lib = library().await;
    assert_eq!(lib.matches("price.number=5").await, [2], "any value of several");
    assert_eq!(lib.matches("price.number=10.0").await, [0]);
    assert_eq!(lib.matches("price.number.ne=20").await, [0, 2, 3]);
    assert_eq!(lib.matches("price.number.in=5").await, [2]);
    assert_eq!(lib.matches("price.number.exists=false").await, [3]);
}

#[tokio::test]
async fn boolean_false_matches_stored_false_only_and_exists_false() {
    let lib = library().await;
    // Zed has no `instock`: `false` is not "anything but true"
    assert_eq!(lib.matches("instock.boolean=false").await, [1]);
    assert_eq!(lib.matches("instock.boolean=").await, [1]);
    assert_eq!(lib.matches("instock.boolean.in=false").await, [1]);
    assert_eq!(lib.matches("instock.boolean.in=true").await, [0, 2]);
    assert_eq!(
        lib.matches("instock.boolean.in=yes,TRUE").await,
        [1],
        "in: each item other than true is false"
    );
    assert_eq!(lib.matches("instock.boolean.exists=false").await, [3]);
}

#[tokio::test]
async fn date_exists_false_and_in_and_ranges_with_milliseconds() {
    let lib = library().await;
    assert_eq!(lib.matches("published.date.exists=false").await, [3]);
    // 1965-08-01 and 1922-02-02 in milliseconds
    assert_eq!(lib.matches("published.date.in=-139449600000,1815-12-23").await, [0, 1]);
    assert_eq!(lib.matches("published.date.gt=-1511827200000").await, [0]);
    assert_eq!(lib.matches("published.date.lte=-1511827200000").await, [1, 2]);
}

#[tokio::test]
async fn datetime_exists_true_and_in_and_ranges_with_milliseconds() {
    let lib = library().await;
    assert_eq!(lib.matches("at.datetime.exists=true").await, [0, 1]);
    // 2020-01-01T10:00:00Z and 2021-06-01T00:00:00Z in milliseconds
    assert_eq!(lib.matches("at.datetime.in=1577872800000,1622505600000").await, [0, 1]);
    assert_eq!(lib.matches("at.datetime.gt=1577872800000").await, [1]);
    assert_eq!(lib.matches("at.datetime.gte=1577872800000").await, [0, 1]);
    assert_eq!(lib.matches("at.datetime.lt=1622505600000").await, [0]);
    assert_eq!(lib.matches("at.datetime.lte=1622505600000").await, [0, 1]);
    assert_eq!(
        lib.matches("at.datetime=2020-01-01T12:00:00%2B02:00").await,
        [0],
        "an offset is the same instant"
    );
}

#[tokio::test]
async fn filesize_exists_true() {
    let lib = library().await;
    assert_eq!(lib.matches("cover.filesize.exists=true").await, [0, 1]);
    assert_eq!(lib.matches("cover.filesize.exists=maybe").await, [2, 3]);
}

#[tokio::test]
async fn an_operator_the_table_does_not_list_for_a_field_is_ignored_and_matches_exactly() {
    let lib = library().await;
    let herbert = lib.author_of(0).await;
    // reference: only exact, in and exists
    for op in ["ne", "gt", "lt", "regex"] {
        assert_eq!(
            lib.matches(&format!("author.reference.{op}={herbert}")).await,
            [0],
            "{op}"
        );
    }
    // number: no regex
    assert_eq!(lib.matches("price.number.regex=10").await, [0]);
    // boolean: only exact, in and exists
    for op in ["ne", "gt", "gte", "lt", "lte", "regex"] {
        assert_eq!(lib.matches(&format!("instock.boolean.{op}=true")).await, [0, 2], "{op}");
    }
    // date, datetime and filesize: no ne and no regex
    for op in ["ne", "regex"] {
        assert_eq!(
            lib.matches(&format!("published.date.{op}=1965-08-01")).await,
            [0],
            "{op}"
        );
        assert_eq!(
            lib.matches(&format!("at.datetime.{op}=2020-01-01T10:00:00Z")).await,
            [0],
            "{op}"
        );
        assert_eq!(lib.matches(&format!("cover.filesize.{op}=1000")).await, [0], "{op}");
    }
    // an operator after the operator is not read either
    assert_eq!(lib.matches("title.string.ne.gt=Dune").await, [1, 2, 3]);
}

#[tokio::test]
async fn regex_flags_other_than_i_m_s_are_dropped() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string.regex=/^U/gyud").await, [2]);
    assert_eq!(
        lib.matches("title.string.regex=/^u/gyud").await,
        NONE,
        "dropped flags do not imply i"
    );
    assert_eq!(lib.matches("note.string.regex=/^line two$/gm").await, [0]);
    assert_eq!(lib.matches("note.string.regex=/one.line/us").await, [0]);
    assert_eq!(lib.matches("note.string.regex=/^LINE.ONE.LINE/ims").await, [0]);
}

#[tokio::test]
async fn a_regex_value_not_wrapped_in_slashes_is_the_pattern_as_it_is() {
    let lib = library().await;
    assert_eq!(lib.matches("cover.filetype.regex=image/p").await, [1]);
    assert_eq!(lib.matches("title.string.regex=^D").await, [0]);
    assert_eq!(lib.matches("title.string.regex=^d").await, NONE, "no flags");
    // the last slash ends the pattern
    assert_eq!(lib.matches("cover.filetype.regex=/^image/p/").await, [1]);
}

#[tokio::test]
async fn invalid_regex_is_400_with_the_json_error_body() {
    let lib = library().await;
    for bad in ["/a/x", "/a/ix", "/(a/", "(a", "/[z-a]/", "/a{99999}/"] {
        lib.assert_invalid_regex("title", bad).await;
    }
}

#[tokio::test]
async fn a_regex_the_rust_regex_crate_rejects_is_400_invalid_regex() {
    let lib = library().await;
    // look-around and back-references: JavaScript and PostgreSQL take them
    for bad in ["/(?=D)D/", "/(?!E)D/", "/(?<=D)u/", "/(u)\\1/", "/\\b(n)e\\1/i"] {
        lib.assert_invalid_regex("title", bad).await;
    }
    // class syntax PostgreSQL would read otherwise: set operations, nested classes
    for bad in ["/[D&&E]/", "/[a-z--u]/", "/[[Du]]ne/"] {
        lib.assert_invalid_regex("title", bad).await;
    }
    // even on a property no entity has
    lib.assert_invalid_regex("nothing", "/(?=a)/").await;
}

#[tokio::test]
async fn a_regex_pattern_over_512_characters_is_400_invalid_regex() {
    let lib = library().await;
    // 512 characters (the pattern, without slashes and flags) are accepted
    let at_limit = format!("Dune|{}", "z".repeat(507));
    assert_eq!(at_limit.chars().count(), 512);
    assert_eq!(
        lib.matches(&format!("title.string.regex=/{}/i", urlencode(&at_limit)))
            .await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(&at_limit)))
            .await,
        [0]
    );
    for over in [format!("{at_limit}z"), "a".repeat(5000)] {
        for value in [format!("/{over}/"), over.clone()] {
            lib.assert_invalid_regex("title", &value).await;
        }
    }
    // characters, not bytes: 512 two-byte characters are accepted
    let wide = format!("Dune|{}", "é".repeat(507));
    assert_eq!(
        lib.matches(&format!("title.string.regex=/{}/", urlencode(&wide))).await,
        [0]
    );
    lib.assert_invalid_regex("title", &format!("/{wide}é/")).await;
}

#[tokio::test]
async fn invalid_reference_id_is_400_invalid_id_with_the_json_error_body() {
    let lib = library().await;
    let herbert = lib.author_of(0).await;
    let invalid_id = json!({"status": 400, "error": "invalid_id", "message": "Invalid ID"});
    for bad in [
        "nope".to_owned(),
        "5F1A2B3C4D5E6F7A8B9C0D1E".to_owned(),
        "5f1a2b3c4d5e6f7a8b9c0d1".to_owned(),
        format!("{herbert}0"),
        format!("{herbert},nope"),
        format!("{herbert},"),
    ] {
        for key in ["author.reference", "author.reference.in"] {
            let (status, body) = lib.query(&format!("{key}={bad}")).await;
            assert_eq!((status, body), (400, invalid_id.clone()), "{key}={bad}");
        }
    }
    // `exists` takes true or false, not an id
    assert_eq!(lib.matches("author.reference.exists=nope").await, [2, 3]);
}

#[tokio::test]
async fn file_name_type_and_language_take_every_string_operator() {
    let lib = library().await;
    assert_eq!(lib.matches("cover.filename=emma.png").await, [1]);
    assert_eq!(lib.matches("cover.filename.ne=dune.jpg").await, [1, 2, 3]);
    assert_eq!(lib.matches("cover.filename.gt=dune.jpg").await, [1]);
    assert_eq!(lib.matches("cover.filename.gte=dune.jpg").await, [0, 1]);
    assert_eq!(lib.matches("cover.filename.lt=emma.png").await, [0]);
    assert_eq!(lib.matches("cover.filename.lte=emma.png").await, [0, 1]);
    assert_eq!(lib.matches("cover.filename.in=emma.png,x").await, [1]);
    assert_eq!(lib.matches("cover.filename.exists=false").await, [2, 3]);
    assert_eq!(lib.matches("cover.filetype.regex=/JPEG$/i").await, [0]);
    assert_eq!(lib.matches("cover.filetype.ne=image/jpeg").await, [1, 2, 3]);
    assert_eq!(lib.matches("cover.filetype.exists=true").await, [0, 1]);
    assert_eq!(lib.matches("title.language.regex=^e").await, [1]);
    assert_eq!(lib.matches("title.language.in=en,et").await, [1]);
    assert_eq!(lib.matches("title.language.ne=en").await, [0, 2, 3]);
    assert_eq!(lib.matches("title.language.exists=false").await, [0, 2, 3]);
}

#[tokio::test]
async fn a_filter_key_given_twice_must_match_both_times() {
    let lib = library().await;
    assert_eq!(lib.matches("title.string=Dune&title.string=Emma").await, NONE);
    assert_eq!(lib.matches("title.string.in=Dune,Emma").await, [0, 1], "in is the OR");
    assert_eq!(lib.matches("title.string.in=Dune,Emma&price.number.gt=10").await, [1]);
    assert_eq!(lib.matches("title.string.ne=Dune&title.string.ne=Zed").await, [1, 2]);
    assert_eq!(
        lib.matches("author.reference.exists=false&price.number.exists=true")
            .await,
        [2]
    );
}

#[tokio::test]
async fn without_sort_results_are_in_id_ascending_creation_order() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let mut created = Vec::new();
    for (name, rank) in [("c", 1), ("a", 3), ("d", 2), ("b", 0)] {
        created.push(
            app.create(
                &token,
                &item,
                json!([{"type": "name", "string": name}, {"type": "rank", "number": rank}]),
            )
            .await,
        );
    }
    let ids = |body: &Json| -> Vec<String> {
        body["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut ascending = created.clone();
    ascending.sort();
    assert_eq!(ascending, created, "ids grow with creation");
    for query in [
        "",
        "&sort=",
        "&sort=bogus",
        "&rank.number.gte=0",
        "&name.string.regex=.",
    ] {
        let (status, body) = app
            .get(&format!("/api/demo/entity?_type.string=item{query}"), &token)
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(ids(&body), created, "{query}");
    }
    // and a page is a window of that order
    let (_, body) = app
        .get("/api/demo/entity?_type.string=item&limit=2&skip=1", &token)
        .await;
    assert_eq!(ids(&body), created[1..3]);
    // ties on a sort key fall back to `_id` ascending too
    let (_, body) = app
        .get("/api/demo/entity?_type.string=item&sort=nothing.number", &token)
        .await;
    assert_eq!(ids(&body), created);
}

#[tokio::test]
async fn the_list_envelope_is_entities_count_limit_and_skip() {
    let lib = library().await;
    let (status, body) = lib.query("title.string.in=Dune,Emma").await;
    assert_eq!(status, 200, "{body}");
    let mut keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["count", "entities", "limit", "skip"]);
    assert_eq!(
        (&body["count"], &body["limit"], &body["skip"]),
        (&json!(2), &json!(100), &json!(0)),
        "defaults: limit 100, skip 0"
    );
    assert_eq!(body["entities"].as_array().map(Vec::len), Some(2));
    let (_, body) = lib.query("title.string=nothing").await;
    assert_eq!(body["entities"], json!([]));
    assert_eq!(body["count"], 0);
}

#[tokio::test]
async fn limit_defaults_to_100_also_for_0_and_non_numeric_and_has_no_upper_bound() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    for _ in 0..101 {
        app.create(&token, &item, json!([])).await;
    }
    let page = |query: &'static str| {
        let app = &app;
        let token = &token;
        async move {
            let (status, body) = app
                .get(&format!("/api/demo/entity?_type.string=item{query}"), token)
                .await;
            assert_eq!(status, 200, "{query}: {body}");
            (
                body["entities"].as_array().unwrap().len(),
                body["count"].as_i64().unwrap(),
                body["limit"].as_i64().unwrap(),
                body["skip"].as_i64().unwrap(),
            )
        }
    };
    for query in ["", "&limit=0", "&limit=abc", "&limit=", "&limit=1.5e3"] {
        assert_eq!(page(query).await, (100, 101, 100, 0), "{query}");
    }
    assert_eq!(page("&limit=101").await, (101, 101, 101, 0));
    assert_eq!(page("&limit=1000000").await, (101, 101, 1000000, 0), "no upper bound");
    assert_eq!(page("&skip=100").await, (1, 101, 100, 100));
    assert_eq!(page("&skip=abc").await, (100, 101, 100, 0), "skip defaults to 0");
    assert_eq!(page("&limit=0&skip=99").await, (2, 101, 100, 99));
}

#[tokio::test]
async fn an_authenticated_caller_searches_public_and_domain_entities_in_their_view() {
    let lib = library().await;
    let (_, key) = lib.app.add_person(&lib.token, "Reader").await;
    let reader = lib.app.token_for(&key).await;
    let (_, book) = lib
        .app
        .get(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    let book_type = book["entity"]["_type"][0]["reference"].as_str().unwrap().to_owned();
    let domain = lib
        .app
        .create(
            &lib.token,
            &book_type,
            json!([{"type": "title", "string": "Persuasion"}, {"type": "secret", "string": "covert"},
                   {"type": "_sharing", "string": "domain"}]),
        )
        .await;
    let found = |token: Option<&str>, q: &str| {
        let path = format!("/api/demo/entity?q={q}");
        let app = &lib.app;
        let token = token.map(str::to_owned);
        async move {
            let (status, body) = app.call("GET", &path, token.as_deref(), None).await;
            assert_eq!(status, 200, "{body}");
            body["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["_id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    // public and domain entities: by their shared values
    assert_eq!(found(Some(&reader), "dune").await, [lib.books[0].clone()]);
    assert_eq!(found(Some(&reader), "persua").await, [domain.as_str()]);
    assert_eq!(found(None, "persua").await, Vec::<String>::new(), "not public");
    // the owner, a viewer, finds every searchable value
    assert_eq!(found(Some(&lib.token), "covert").await, [domain.as_str()]);
    assert_eq!(found(Some(&lib.token), "emma").await, [lib.books[1].clone()]);
    // values hidden from the reader's view, and private entities: not found
    assert_eq!(found(Some(&reader), "covert").await, Vec::<String>::new());
    assert_eq!(found(Some(&reader), "hidden").await, Vec::<String>::new());
    assert_eq!(found(Some(&reader), "emma").await, Vec::<String>::new());
    // several words: a viewer's may lie in shared and unshared values alike,
    // another caller's all in the shared ones
    assert_eq!(found(Some(&lib.token), "persua%20covert").await, [domain.as_str()]);
    assert_eq!(found(Some(&reader), "persua%20covert").await, Vec::<String>::new());
}

#[tokio::test]
async fn an_anonymous_caller_cannot_filter_on_a_property_hidden_from_the_public_view() {
    let lib = library().await;
    let owner = Some(lib.token.as_str());
    // `secret` has no `_sharing`: Dune, public, shows it only to viewers
    assert_eq!(lib.matches_as(owner, "secret.string=hidden-word").await, [0]);
    assert_eq!(lib.matches_as(None, "secret.string=hidden-word").await, NONE);
    assert_eq!(lib.matches_as(None, "secret.string.regex=hidden").await, NONE);
    assert_eq!(lib.matches_as(None, "secret.string.in=hidden-word").await, NONE);
    assert_eq!(lib.matches_as(None, "secret.string.exists=true").await, NONE);
    // to the anonymous caller Dune has no `secret` at all
    assert_eq!(lib.matches_as(owner, "secret.string.exists=false").await, [1, 2, 3]);
    assert_eq!(lib.matches_as(None, "secret.string.exists=false").await, [0]);
    assert_eq!(lib.matches_as(None, "secret.string.ne=hidden-word").await, [0]);
    // values of undefined properties and rights are hidden too; shared ones are not
    assert_eq!(lib.matches_as(None, "price.number=10").await, NONE);
    let person = lib.app.person.clone();
    assert_eq!(
        lib.matches_as(owner, &format!("_owner.reference={person}")).await,
        [0, 1, 2, 3]
    );
    assert_eq!(lib.matches_as(None, &format!("_owner.reference={person}")).await, NONE);
    assert_eq!(lib.matches_as(None, "title.string=Dune").await, [0]);
    assert_eq!(lib.matches_as(None, "_sharing.string=public").await, [0]);
}

#[tokio::test]
async fn a_person_without_rights_cannot_filter_on_a_property_hidden_from_the_domain_view() {
    let lib = library().await;
    let (_, key) = lib.app.add_person(&lib.token, "Reader").await;
    let reader = lib.app.token_for(&key).await;
    assert_eq!(lib.matches_as(Some(&reader), "title.string=Dune").await, [0]);
    assert_eq!(lib.matches_as(Some(&reader), "secret.string=hidden-word").await, NONE);
    assert_eq!(lib.matches_as(Some(&reader), "secret.string.exists=false").await, [0]);
    assert_eq!(
        lib.matches_as(Some(&reader), "title.string=Emma").await,
        NONE,
        "private"
    );
}

#[tokio::test]
async fn sort_and_group_see_only_the_values_the_callers_view_shows() {
    let lib = library().await;
    lib.app
        .post(
            &format!("/api/demo/entity/{}", lib.books[1]),
            &lib.token,
            json!({"type": "_sharing", "string": "public"}),
        )
        .await;
    let owner = Some(lib.token.as_str());
    // `price` (no definition) is hidden from the public view of Dune (10) and Emma (20)
    assert_eq!(lib.matches_as(owner, "sort=-price.number").await, [2, 1, 0, 3]);
    assert_eq!(
        lib.matches_as(None, "sort=-price.number").await,
        [0, 1],
        "no key: _id order"
    );
    assert_eq!(lib.matches_as(None, "sort=-title.string").await, [1, 0], "a public key");
    let groups = |token: Option<&str>, query: &str| {
        let path = format!("/api/demo/entity?_type.string=book&{query}");
        let app = &lib.app;
        let token = token.map(str::to_owned);
        async move {
            let (status, body) = app.call("GET", &path, token.as_deref(), None).await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let body = groups(None, "group=price.number&props=price,title").await;
    assert_eq!(body["count"], 1, "{body}");
    assert_eq!(body["entities"][0]["_count"], 2, "{body}");
    assert_eq!(body["entities"][0]["title"][0]["string"], "Dune", "{body}");
    assert!(body["entities"][0].get("price").is_none(), "{body}");
    let body = groups(owner, "group=price.number&props=price").await;
    assert_eq!(body["count"], 4, "10, 20, 5 and none: {body}");
    let body = groups(None, "group=title.string&props=title").await;
    assert_eq!(body["count"], 2, "{body}");
}

#[tokio::test]
async fn group_counts_only_the_entities_the_filters_match() {
    let lib = library().await;
    let (status, body) = lib
        .query("group=instock.boolean&instock.boolean.exists=true&props=instock")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 2, "{body}");
    let mut rows: Vec<(Json, Json)> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["instock"][0]["boolean"].clone(), row["_count"].clone()))
        .collect();
    rows.sort_by_key(|(value, _)| value.to_string());
    assert_eq!(rows, [(json!(false), json!(1)), (json!(true), json!(2))]);
}

#[tokio::test]
async fn props_naming_nothing_returns_only_id() {
    let lib = library().await;
    for props in ["", "nothing", "_id"] {
        let (status, body) = lib.query(&format!("title.string=Dune&props={props}")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["entities"], json!([{"_id": lib.books[0]}]), "props={props}");
    }
}

#[tokio::test]
async fn type_string_takes_the_string_operators() {
    let lib = library().await;
    let (_, body) = lib
        .app
        .get("/api/demo/entity?_type.string.in=book,person&sort=_id", &lib.token)
        .await;
    assert_eq!(body["count"], 4 + 3, "four books, the owner and two authors: {body}");
    let (_, body) = lib
        .app
        .get("/api/demo/entity?_type.string.regex=/^BO/i", &lib.token)
        .await;
    assert_eq!(body["count"], 4, "{body}");
}

#[tokio::test]
async fn a_search_page_counts_every_match_whatever_the_page_shows() {
    let lib = library().await;
    let (_, all) = lib.query("q=e").await;
    let every = lib.matches("q=e").await;
    assert!(every.len() > 2, "a search matching more than a page: {all}");
    assert_eq!(all["count"], every.len());
    for (window, shown) in [
        ("limit=2", &every[..2]),
        ("limit=2&skip=2", &every[2..every.len().min(4)]),
    ] {
        let (status, body) = lib.query(&format!("q=e&{window}")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["count"], every.len(), "{window}: {body}");
        assert_eq!(lib.matches(&format!("q=e&{window}")).await, shown, "{window}");
    }
    let (_, past) = lib.query("q=e&limit=2&skip=50").await;
    assert_eq!(
        (past["count"].clone(), past["entities"].clone()),
        (json!(every.len()), json!([]))
    );
}

#[tokio::test]
async fn type_filters_by_reference_by_negation_and_by_existence() {
    let lib = library().await;
    let count = |query: String| {
        let app = &lib.app;
        let token = &lib.token;
        async move {
            let (status, body) = app.get(&format!("/api/demo/entity?{query}"), token).await;
            assert_eq!(status, 200, "{query}: {body}");
            body["count"].as_i64().unwrap()
        }
    };
    let (_, dune) = lib
        .app
        .get(&format!("/api/demo/entity/{}", lib.books[0]), &lib.token)
        .await;
    let book_type = dune["entity"]["_type"][0]["reference"].as_str().unwrap().to_owned();
    assert_eq!(count(format!("_type.reference={book_type}")).await, 4);
    let all = count("limit=1".to_owned()).await;
    assert!(all > 4, "types, definitions and people besides the books: {all}");
    assert_eq!(count("_type.string.ne=book".to_owned()).await, all - 4);
    assert_eq!(
        count("_type.string.exists=true".to_owned()).await,
        all,
        "every entity has its one type"
    );
    assert_eq!(count("_type.string.exists=false".to_owned()).await, 0);
    let unknown = "5f1a2b3c4d5e6f7a8b9c0d1e";
    assert_eq!(count(format!("_type.reference.in={book_type},{unknown}")).await, 4);
    assert_eq!(count(format!("_type.string=book&_type.reference={unknown}")).await, 0);
}

#[tokio::test]
async fn regex_word_boundaries_match_at_the_edges_of_words() {
    let lib = library().await;
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(r"/\bdune\b/i")))
            .await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(r"e\b"))).await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(r"\Bun\B")))
            .await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(r"\Bdu"))).await,
        NONE
    );
    assert_eq!(
        lib.matches(&format!("note.string.regex={}", urlencode(r"\<two\>")))
            .await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("note.string.regex={}", urlencode(r"\b{start}on\b{end}")))
            .await,
        NONE
    );
    assert_eq!(
        lib.matches(&format!("note.string.regex={}", urlencode(r"ne\b{end-half}")))
            .await,
        [0]
    );
    assert_eq!(
        lib.matches(&format!("note.string.regex={}", urlencode(r"\b{start-half}two")))
            .await,
        [0]
    );
    // an escaped backslash before a `b` is a backslash and a letter
    assert_eq!(
        lib.matches(&format!("title.string.regex={}", urlencode(r"\\b"))).await,
        NONE
    );
}

// Pages longer than a chunk (500 entities) are streamed a chunk at a time;
// queries no index can answer share a smaller budget of connections.

/// `count` entities the owner sees, written in bulk on a connection of the
/// test's own: number `n` (`i % 100`, so values repeat) in the document and
/// the value rows, and on every seventh a reference to the owner.
async fn bulk_entities(app: &TestApp, count: i64) {
    let mut conn = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&app.database_url)
        .await
        .unwrap();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "WITH n AS (SELECT i, 'bulk' || lpad(i::text, 20, '0') AS id FROM generate_series(1, $2) i), \
             e AS (INSERT INTO entities (db, id, created_at, viewers, doc) \
                   SELECT 'demo', n.id, now(), ARRAY[$1], jsonb_build_object('_id', n.id, 'n', \
                     jsonb_build_array(jsonb_build_object('_id', 'v' || n.id, 'number', n.i % 100))) \
                     || CASE WHEN n.i % 7 = 0 THEN jsonb_build_object('who', \
                        jsonb_build_array(jsonb_build_object('_id', 'w' || n.id, 'reference', $1::text))) \
                        ELSE '{}' END \
                   FROM n RETURNING id) \
             INSERT INTO property_values (db, id, entity_id, prop, number, created_at) \
             SELECT 'demo', 'v' || e.id, e.id, 'n', n.i % 100, now() FROM e JOIN n ON n.id = e.id",
        )
        .bind::<diesel::sql_types::Text, _>(&app.person)
        .bind::<diesel::sql_types::Integer, _>(count as i32),
        &mut conn,
    )
    .await
    .unwrap();
    // as autovacuum would, so the planner knows the tables' new sizes
    diesel_async::RunQueryDsl::execute(diesel::sql_query("ANALYZE entities, property_values"), &mut conn)
        .await
        .unwrap();
}

/// The answer's status and exact text.
async fn answer_text(app: &TestApp, token: &str, query: &str) -> (u16, String) {
    let response = app
        .http
        .get(format!("{}/api/demo/entity?{query}", app.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The answer `limit` and `skip` should give, from pages of at most 100
/// (short enough to be read whole), as the service writes it.
async fn read_in_pages(app: &TestApp, token: &str, query: &str, limit: usize, skip: usize) -> String {
    let mut entities = Vec::new();
    let mut count = Json::Null;
    while entities.len() < limit {
        let take = (limit - entities.len()).min(100);
        let at = skip + entities.len();
        let (status, body) = app
            .get(&format!("/api/demo/entity?{query}&limit={take}&skip={at}"), token)
            .await;
        assert_eq!(status, 200, "{body}");
        count = body["count"].clone();
        let page = body["entities"].as_array().unwrap().clone();
        if page.is_empty() {
            break;
        }
        entities.extend(page);
    }
    json!({"entities": entities, "count": count, "limit": limit, "skip": skip}).to_string()
}

#[tokio::test]
async fn a_page_longer_than_a_chunk_is_the_same_answer_as_its_pages() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    bulk_entities(&app, 1234).await;
    for (query, limit, skip) in [
        ("n.number.gte=0", 2000, 0),
        ("n.number.gte=0", 1000, 100),
        ("n.number.gte=0&sort=-_id", 700, 3),
        ("n.number.lt=50&props=who", 600, 0),
        ("n.number.gte=0", 600, 5000),
    ] {
        let (status, streamed) = answer_text(&app, &token, &format!("{query}&limit={limit}&skip={skip}")).await;
        assert_eq!(status, 200, "{streamed}");
        let expected = read_in_pages(&app, &token, query, limit, skip).await;
        assert_eq!(streamed, expected, "{query} limit {limit} skip {skip}");
    }
    // what was compared is the whole page, references resolved
    let (_, all) = answer_text(&app, &token, "n.number.gte=0&limit=2000").await;
    let all: Json = serde_json::from_str(&all).unwrap();
    assert_eq!(all["entities"].as_array().unwrap().len(), 1234);
    assert_eq!(all["count"], 1234);
    assert_eq!(
        all["entities"][6]["who"][0]["string"], "Demo Owner",
        "{}",
        all["entities"][6]
    );
}

#[tokio::test]
async fn a_page_longer_than_a_chunk_sorted_by_a_value_is_the_same_answer_as_its_pages() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    bulk_entities(&app, 1234).await;
    for (query, limit, skip) in [
        ("n.number.gte=0&sort=-n.number", 1000, 50),
        ("n.number.gte=0&sort=n.number,-_id", 2000, 0),
        ("n.number.gte=10&sort=n.number", 600, 700),
        ("n.number.gte=0&sort=n.number", 600, 5000),
    ] {
        let (status, streamed) = answer_text(&app, &token, &format!("{query}&limit={limit}&skip={skip}")).await;
        assert_eq!(status, 200, "{streamed}");
        let expected = read_in_pages(&app, &token, query, limit, skip).await;
        assert_eq!(streamed, expected, "{query} limit {limit} skip {skip}");
    }
    let (_, sorted) = answer_text(&app, &token, "n.number.gte=0&sort=-n.number&limit=1000").await;
    let sorted: Json = serde_json::from_str(&sorted).unwrap();
    let numbers: Vec<i64> = sorted["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| entity["n"][0]["number"].as_i64().unwrap())
        .collect();
    assert_eq!((numbers.len(), numbers[0], numbers[999]), (1000, 99, 18));
    assert!(numbers.windows(2).all(|pair| pair[0] >= pair[1]));
}

#[tokio::test]
async fn a_streamed_page_that_fails_at_once_answers_its_error() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let (status, body) = app
        .get("/api/demo/entity?name.string.regex=%5B&limit=100000", &token)
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_regex")), "{body}");
    let (status, body) = app.get("/api/demo/entity?limit=100000", &token).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["count"].as_i64().unwrap() > 0, "{body}");
}

#[tokio::test]
async fn expensive_queries_leave_connections_for_cheap_requests() {
    let app = support::TestApp::start_with(
        support::Storage::Local,
        &[
            ("database.pool_size", "4".to_owned()),
            ("database.expensive_queries", "2".to_owned()),
            ("database.statement_timeout_ms", "1000".to_owned()),
        ],
    )
    .await;
    let token = app.owner_token().await;
    bulk_entities(&app, 100_000).await;
    // A sort by value over every entity (`ne` narrows nothing) runs into
    // the statement timeout; more of them than the pool has connections.
    let expensive: Vec<_> = (0..16)
        .map(|i| {
            // distinct queries: the answer cache would run one for all alike
            let request = app
                .http
                .get(format!("{}/api/demo/entity?n.number.ne=-{i}&sort=-n.number", app.url))
                .bearer_auth(&token);
            tokio::spawn(request.send())
        })
        .collect();
    let mut monitor = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&app.database_url)
        .await
        .unwrap();
    #[derive(diesel::QueryableByName)]
    struct Running {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        running: i64,
    }
    let running = diesel::sql_query(
        "SELECT count(*) AS running FROM pg_stat_activity WHERE datname = current_database() \
         AND state = 'active' AND query LIKE '%count(*) OVER ()%' AND pid <> pg_backend_pid()",
    );
    let mut busiest = 0;
    for _ in 0..1000 {
        busiest = diesel_async::RunQueryDsl::get_result::<Running>(running.clone(), &mut monitor)
            .await
            .unwrap()
            .running;
        if busiest > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(busiest > 0, "the expensive queries are running");
    // While they run: an indexed lookup, a cheap list query and /ready.
    let (status, body) = app.get(&format!("/api/demo/entity/{}", app.person), &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entity"]["_id"], app.person.as_str());
    let (status, body) = app.get("/api/demo/entity?n.number=42&limit=3", &token).await;
    assert_eq!((status, body["count"].as_i64()), (200, Some(1000)), "{body}");
    let (status, body) = app.call("GET", "/ready", None, None).await;
    assert_eq!((status, &body["database"]), (200, &json!(true)), "{body}");
    let now_running = diesel_async::RunQueryDsl::get_result::<Running>(running, &mut monitor)
        .await
        .unwrap()
        .running;
    assert!(now_running <= 2, "{now_running} expensive statements at once");
    // Each expensive query was answered, or refused with Retry-After.
    for request in expensive {
        let response = request.await.unwrap().unwrap();
        if response.status() == 200 {
            continue;
        }
        let body = support::assert_retry_later(response).await;
        assert!(
            body["error"] == "query_timeout" || body["error"] == "database_busy",
            "{body}"
        );
    }
}
