//! `POST /api/{db}/entity/{_id}/duplicate` and `GET /api/{db}/entity/{_id}/activity`
//! against real PostgreSQL: one test per rule of the contract.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

/// An app whose owner holds `owner`, with a type `book` (`title` a string).
async fn app_with_books(overrides: &[(&str, String)]) -> (TestApp, String, String) {
    let app = TestApp::start_with(support::Storage::Local, overrides).await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "title", "string", json!([])).await;
    (app, owner, book)
}

async fn duplicate(app: &TestApp, token: &str, id: &str, body: Option<Json>) -> (u16, Json) {
    app.call("POST", &format!("/api/demo/entity/{id}/duplicate"), Some(token), body)
        .await
}

async fn read(app: &TestApp, token: &str, id: &str) -> Json {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"].clone()
}

/// The ids of the copies a 200 answer lists.
fn copy_ids(body: &Json) -> Vec<String> {
    body.as_array()
        .unwrap_or_else(|| panic!("not an array: {body}"))
        .iter()
        .map(|copy| copy["_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn live_entities_of_type(app: &TestApp, type_id: &str) -> i64 {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use eds::db::schema::entities::dsl;
    let mut conn = app.pool.get().await.unwrap();
    dsl::entities
        .filter(dsl::type_id.eq(type_id))
        .filter(dsl::deleted_at.is_null())
        .count()
        .get_result(&mut conn)
        .await
        .unwrap()
}

fn assert_error(answer: (u16, Json), status: u16, code: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"], code, "{}", answer.1);
    assert_eq!(answer.1["status"], status, "{}", answer.1);
    assert!(answer.1["message"].is_string(), "{}", answer.1);
}

#[tokio::test]
async fn duplicate_needs_a_token() {
    let (app, owner, book) = app_with_books(&[]).await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    let answer = app
        .call(
            "POST",
            &format!("/api/demo/entity/{id}/duplicate"),
            None,
            Some(json!({})),
        )
        .await;
    assert_error(answer, 401, "unauthorized");
}

#[tokio::test]
async fn duplicate_of_an_entity_the_caller_cannot_see_is_404() {
    let (app, owner, book) = app_with_books(&[]).await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    let (_, key) = app.add_person(&owner, "Pat").await;
    let pat = app.token_for(&key).await;
    assert_error(duplicate(&app, &pat, &id, None).await, 404, "not_found");
    assert_error(duplicate(&app, &owner, "not-an-id", None).await, 404, "not_found");
    assert_error(
        duplicate(&app, &owner, "6571f3a4c2b9e8d7f6a5b4c3", None).await,
        404,
        "not_found",
    );
}

#[tokio::test]
async fn duplicate_by_a_caller_who_is_not_an_owner_is_403() {
    let (app, owner, book) = app_with_books(&[]).await;
    let (pat_id, key) = app.add_person(&owner, "Pat").await;
    let pat = app.token_for(&key).await;
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "title", "string": "Dune"}, {"type": "_editor", "reference": pat_id}]),
        )
        .await;
    assert_error(duplicate(&app, &pat, &id, None).await, 403, "forbidden");
    assert_eq!(live_entities_of_type(&app, &book).await, 1);
}

#[tokio::test]
async fn duplicate_copies_live_values_but_files_credentials_created_and_ignored_ones() {
    let (app, owner, book) = app_with_books(&[]).await;
    app.define(&owner, &book, "isbn", "string", json!([])).await;
    app.define(
        &owner,
        &book,
        "subtitle",
        "string",
        json!([{"type": "multilingual", "boolean": true}]),
    )
    .await;
    let id = app
        .create(
            &owner,
            &book,
            json!([
                {"type": "subtitle", "string": "Dune", "language": "en"},
                {"type": "subtitle", "string": "Düün", "language": "et"},
                {"type": "isbn", "string": "978-0441013593"},
                {"type": "year", "number": 1965},
                {"type": "cover", "filename": "cover.jpg", "filesize": 10, "filetype": "image/jpeg"},
                {"type": "service_api_key", "string": "generate"},
            ]),
        )
        .await;
    let source = read(&app, &owner, &id).await;
    // an overwritten value is not live: only its successor is copied
    let year = source["year"][0]["_id"].clone();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "year", "number": 1966, "_id": year}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = duplicate(&app, &owner, &id, Some(json!({"ignoredProperties": ["isbn"]}))).await;
    assert_eq!(status, 200, "{body}");
    let [copy_id] = copy_ids(&body).try_into().unwrap();
    let copy = read(&app, &owner, &copy_id).await;
    let titles: Vec<(&Json, &Json)> = copy["subtitle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|title| (&title["string"], &title["language"]))
        .collect();
    assert_eq!(titles, [(&json!("Dune"), &json!("en")), (&json!("Düün"), &json!("et"))]);
    assert_eq!(copy["year"].as_array().unwrap().len(), 1, "{copy}");
    assert_eq!(copy["year"][0]["number"], 1966);
    assert_eq!(copy["_type"][0]["reference"], book.as_str());
    for left_out in ["isbn", "cover", "service_api_key"] {
        assert!(copy.get(left_out).is_none(), "{left_out} copied: {copy}");
    }
    // `_created` is the copy's own, not the source's
    assert_ne!(copy["_created"][0]["_id"], source["_created"][0]["_id"]);
    assert_eq!(copy["_created"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn duplicate_takes_the_next_counter_value() {
    let (app, owner, book) = app_with_books(&[]).await;
    app.define(&owner, &book, "no", "counter", json!([])).await;
    let id = app
        .create(&owner, &book, json!([{"type": "no", "counter": true}]))
        .await;
    assert_eq!(read(&app, &owner, &id).await["no"][0]["number"], 1);
    let (status, body) = duplicate(&app, &owner, &id, Some(json!({"count": 2}))).await;
    assert_eq!(status, 200, "{body}");
    let mut numbers = Vec::new();
    for copy in copy_ids(&body) {
        numbers.push(read(&app, &owner, &copy).await["no"][0]["number"].clone());
    }
    assert_eq!(numbers, [json!(2), json!(3)]);
}

#[tokio::test]
async fn duplicate_computes_formulas_afresh() {
    let (app, owner, book) = app_with_books(&[]).await;
    app.define(
        &owner,
        &book,
        "label",
        "string",
        json!([{"type": "formula", "string": "'Book ' _id"}]),
    )
    .await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    app.settle().await;
    assert_eq!(
        read(&app, &owner, &id).await["label"][0]["string"],
        format!("Book {id}")
    );
    let (status, body) = duplicate(&app, &owner, &id, None).await;
    assert_eq!(status, 200, "{body}");
    let [copy] = copy_ids(&body).try_into().unwrap();
    app.settle().await;
    let copied = read(&app, &owner, &copy).await;
    assert_eq!(copied["label"].as_array().unwrap().len(), 1, "{copied}");
    assert_eq!(copied["label"][0]["string"], format!("Book {copy}"));
}

#[tokio::test]
async fn duplicate_keeps_the_rights_and_adds_the_caller_as_owner() {
    let (app, owner, book) = app_with_books(&[]).await;
    let (pat_id, key) = app.add_person(&owner, "Pat").await;
    let (viewer_id, _) = app.add_person(&owner, "Vic").await;
    let pat = app.token_for(&key).await;
    // Pat owns the shelf; the book inherits Pat's ownership from it
    let shelf = app
        .create(
            &pat,
            &book,
            json!([{"type": "title", "string": "Shelf"}, {"type": "_expander", "reference": app.person}]),
        )
        .await;
    let id = app
        .create(
            &owner,
            &book,
            json!([
                {"type": "title", "string": "Dune"},
                {"type": "_parent", "reference": shelf},
                {"type": "_inheritrights", "boolean": true},
                {"type": "_viewer", "reference": viewer_id},
                {"type": "_sharing", "string": "domain"},
            ]),
        )
        .await;
    let (status, body) = duplicate(&app, &pat, &id, None).await;
    assert_eq!(status, 200, "{body}");
    let [copy] = copy_ids(&body).try_into().unwrap();
    let copied = read(&app, &pat, &copy).await;
    let references = |prop: &str| -> Vec<String> {
        let mut ids: Vec<String> = copied[prop]
            .as_array()
            .unwrap_or_else(|| panic!("no {prop}: {copied}"))
            .iter()
            .map(|value| value["reference"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };
    let mut owners = vec![app.person.clone(), pat_id.clone()];
    owners.sort();
    assert_eq!(references("_owner"), owners);
    assert_eq!(references("_viewer"), [viewer_id]);
    assert_eq!(references("_parent"), [shelf]);
    assert_eq!(copied["_sharing"][0]["string"], "domain");
    assert_eq!(copied["_inheritrights"][0]["boolean"], true);
    // the caller already among the owners is not added twice
    let (status, body) = duplicate(&app, &owner, &copy, None).await;
    assert_eq!(status, 200, "{body}");
    let [again] = copy_ids(&body).try_into().unwrap();
    assert_eq!(read(&app, &owner, &again).await["_owner"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn duplicate_under_a_parent_needs_expander_on_it_and_writes_nothing_without() {
    let (app, owner, book) = app_with_books(&[]).await;
    let (pat_id, key) = app.add_person(&owner, "Pat").await;
    let pat = app.token_for(&key).await;
    let shelf = app
        .create(&owner, &book, json!([{"type": "title", "string": "Shelf"}]))
        .await;
    let id = app
        .create(
            &owner,
            &book,
            json!([
                {"type": "title", "string": "Dune"},
                {"type": "_parent", "reference": shelf},
                {"type": "_owner", "reference": pat_id},
            ]),
        )
        .await;
    assert_error(
        duplicate(&app, &pat, &id, Some(json!({"count": 3}))).await,
        403,
        "forbidden",
    );
    assert_eq!(live_entities_of_type(&app, &book).await, 2, "no copy was written");
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{shelf}"),
            &owner,
            json!({"type": "_expander", "reference": pat_id}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = duplicate(&app, &pat, &id, Some(json!({"count": 3}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(live_entities_of_type(&app, &book).await, 5);
}

#[tokio::test]
async fn duplicate_makes_count_copies_in_one_transaction_answered_as_creates() {
    let (app, owner, book) = app_with_books(&[]).await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    let (status, body) = duplicate(&app, &owner, &id, Some(json!({"count": 3}))).await;
    assert_eq!(status, 200, "{body}");
    let ids = copy_ids(&body);
    assert_eq!(ids.len(), 3);
    let mut created = Vec::new();
    for (copy, answer) in ids.iter().zip(body.as_array().unwrap()) {
        assert_ne!(copy, &id);
        // shaped as the create answer: the values written, each with its id and type
        let properties = answer["properties"].as_array().unwrap();
        let title = properties.iter().find(|value| value["type"] == "title").unwrap();
        assert_eq!(title["string"], "Dune");
        assert!(title["_id"].is_string(), "{answer}");
        let entity = read(&app, &owner, copy).await;
        assert_eq!(entity["title"][0]["_id"], title["_id"]);
        created.push(entity["_created"][0]["datetime"].clone());
    }
    // one transaction: its new entities share its moment
    assert!(created.iter().all(|at| at == &created[0]), "{created:?}");
}

#[tokio::test]
async fn duplicate_with_a_malformed_body_is_400_invalid_body_and_no_body_makes_one_copy() {
    let (app, owner, book) = app_with_books(&[]).await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    for body in [
        json!({"count": 0}),
        json!({"count": 101}),
        json!({"count": 1.5}),
        json!({"count": "2"}),
        json!({"ignoredProperties": "title"}),
        json!({"ignoredProperties": [1]}),
        json!([]),
    ] {
        assert_error(duplicate(&app, &owner, &id, Some(body)).await, 400, "invalid_body");
    }
    let not_json = app
        .http
        .post(format!("{}/api/demo/entity/{id}/duplicate", app.url))
        .bearer_auth(&owner)
        .body("{count")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status().as_u16(), 400);
    assert_eq!(live_entities_of_type(&app, &book).await, 1, "nothing written");
    let (status, body) = duplicate(&app, &owner, &id, None).await;
    assert_eq!((status, copy_ids(&body).len()), (200, 1), "{body}");
    let (status, body) = duplicate(&app, &owner, &id, Some(json!({"count": 100}))).await;
    assert_eq!((status, copy_ids(&body).len()), (200, 100));
}

#[tokio::test]
async fn duplicate_over_ten_writes_of_values_is_413_too_many_values() {
    let (app, owner, book) = app_with_books(&[("limits.max_values_per_write", "4".to_owned())]).await;
    // live: `_type`, `title` and the `_owner` the create adds: 3 values a copy
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    assert_error(
        duplicate(&app, &owner, &id, Some(json!({"count": 14}))).await,
        413,
        "too_many_values",
    );
    assert_eq!(live_entities_of_type(&app, &book).await, 1);
    let (status, body) = duplicate(&app, &owner, &id, Some(json!({"count": 13}))).await;
    assert_eq!((status, copy_ids(&body).len()), (200, 13), "{body}");
}

async fn activity(app: &TestApp, token: Option<&str>, person: &str, query: &str) -> (u16, Json) {
    app.call(
        "GET",
        &format!("/api/demo/entity/{person}/activity{query}"),
        token,
        None,
    )
    .await
}

/// A person Pat with a token, and a book the owner created and Pat edits.
struct Edits {
    app: TestApp,
    book_type: String,
    owner: String,
    pat_id: String,
    pat: String,
    book_id: String,
}

/// Pat writes a year, overwrites the title, deletes the year: three changes.
async fn pat_edits_a_book() -> Edits {
    let (app, owner, book) = app_with_books(&[]).await;
    let (pat_id, key) = app.add_person(&owner, "Pat").await;
    let pat = app.token_for(&key).await;
    let book_id = app
        .create(
            &owner,
            &book,
            json!([
                {"type": "name", "string": "Dune"},
                {"type": "title", "string": "Dune"},
                {"type": "_editor", "reference": pat_id},
            ]),
        )
        .await;
    let path = format!("/api/demo/entity/{book_id}");
    let (status, body) = app.post(&path, &pat, json!({"type": "year", "number": 1965})).await;
    assert_eq!(status, 200, "{body}");
    let year = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let title = read(&app, &owner, &book_id).await["title"][0]["_id"].clone();
    let (status, body) = app
        .post(
            &path,
            &pat,
            json!({"type": "title", "string": "Dune Messiah", "_id": title}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.delete(&format!("/api/demo/property/{year}"), &pat).await;
    assert_eq!(status, 200, "{body}");
    Edits {
        app,
        book_type: book,
        owner,
        pat_id,
        pat,
        book_id,
    }
}

#[tokio::test]
async fn activity_needs_a_token() {
    let edits = pat_edits_a_book().await;
    assert_error(activity(&edits.app, None, &edits.pat_id, "").await, 401, "unauthorized");
}

#[tokio::test]
async fn activity_of_a_person_the_caller_cannot_read_is_404() {
    let edits = pat_edits_a_book().await;
    // Pat cannot read the owner's person entity (private to the owner)
    let answer = activity(&edits.app, Some(&edits.pat), &edits.app.person, "").await;
    assert_error(answer, 404, "not_found");
    let answer = activity(&edits.app, Some(&edits.owner), "6571f3a4c2b9e8d7f6a5b4c3", "").await;
    assert_error(answer, 404, "not_found");
}

#[tokio::test]
async fn activity_lists_what_the_person_wrote_and_deleted_newest_first() {
    let edits = pat_edits_a_book().await;
    let (status, body) = activity(&edits.app, Some(&edits.owner), &edits.pat_id, "").await;
    assert_eq!(status, 200, "{body}");
    let changes = body["changes"].as_array().unwrap();
    let summary: Vec<(&str, bool, bool)> = changes
        .iter()
        .map(|change| {
            (
                change["type"].as_str().unwrap(),
                change.get("old").is_some(),
                change.get("new").is_some(),
            )
        })
        .collect();
    // the year deleted, the title overwritten (old and new), the year written;
    // Pat's own entity's values written by the owner are not Pat's
    assert_eq!(
        summary,
        [("year", true, false), ("title", true, true), ("year", false, true)]
    );
    let overwrite = &changes[1];
    assert_eq!(overwrite["old"]["string"], "Dune");
    assert_eq!(overwrite["new"]["string"], "Dune Messiah");
    assert_eq!(overwrite["entity"]["_id"], edits.book_id.as_str());
    assert_eq!(overwrite["entity"]["name"], "Dune");
    for change in changes {
        assert_eq!(change["by"], edits.pat_id.as_str());
        assert!(change["at"].is_string());
    }
    let at: Vec<&str> = changes.iter().map(|change| change["at"].as_str().unwrap()).collect();
    assert!(at.windows(2).all(|pair| pair[0] >= pair[1]), "{at:?}");
}

#[tokio::test]
async fn activity_leaves_out_created_values() {
    let edits = pat_edits_a_book().await;
    let (app, pat) = (&edits.app, &edits.pat);
    let own = json!([{"type": "title", "string": "Pat's own"}, {"type": "_viewer", "reference": app.person}]);
    app.create(pat, &edits.book_type, own).await;
    let (status, body) = activity(app, Some(&edits.owner), &edits.pat_id, "").await;
    assert_eq!(status, 200, "{body}");
    let types: Vec<&str> = body["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| change["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"_type") && types.contains(&"title"), "{types:?}");
    assert!(!types.contains(&"_created"), "{types:?}");
}

#[tokio::test]
async fn activity_shows_only_changes_on_entities_the_caller_may_read_in_full() {
    let edits = pat_edits_a_book().await;
    let app = &edits.app;
    let (vic_id, key) = app.add_person(&edits.owner, "Vic").await;
    let vic = app.token_for(&key).await;
    // Vic may read Pat, and the book through its domain sharing only
    for (entity, value) in [
        (&edits.pat_id, json!({"type": "_viewer", "reference": vic_id})),
        (&edits.book_id, json!({"type": "_sharing", "string": "domain"})),
    ] {
        let (status, body) = app
            .post(&format!("/api/demo/entity/{entity}"), &edits.owner, value)
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = activity(app, Some(&vic), &edits.pat_id, "").await;
    assert_eq!((status, body), (200, json!({"changes": []})));
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{}", edits.book_id),
            &edits.owner,
            json!({"type": "_viewer", "reference": vic_id}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = activity(app, Some(&vic), &edits.pat_id, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changes"].as_array().unwrap().len(), 3, "{body}");
}

#[tokio::test]
async fn activity_masks_credentials_as_history_does() {
    let edits = pat_edits_a_book().await;
    let app = &edits.app;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{}", edits.pat_id),
            &edits.pat,
            json!({"type": "service_api_key", "string": "generate"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = activity(app, Some(&edits.owner), &edits.pat_id, "").await;
    assert_eq!(status, 200, "{body}");
    let key = &body["changes"][0];
    assert_eq!(key["type"], "service_api_key", "{body}");
    assert_eq!(key["new"]["string"], "***");
    let (_, history) = app
        .get(&format!("/api/demo/entity/{}/history", edits.pat_id), &edits.owner)
        .await;
    let in_history = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["type"] == "service_api_key" && change["by"] == edits.pat_id.as_str())
        .unwrap();
    assert_eq!(in_history["new"], key["new"]);
}

#[tokio::test]
async fn activity_pages_with_limit_and_skip_and_refuses_pages_over_the_bounds() {
    let edits = pat_edits_a_book().await;
    let (app, owner) = (&edits.app, edits.owner.as_str());
    let (_, all) = activity(app, Some(owner), &edits.pat_id, "").await;
    let all = all["changes"].as_array().unwrap().clone();
    assert_eq!(all.len(), 3);
    let (status, page) = activity(app, Some(owner), &edits.pat_id, "?limit=1&skip=1").await;
    assert_eq!(
        (status, page["changes"].as_array().unwrap()),
        (200, &all[1..2].to_vec())
    );
    let (_, page) = activity(app, Some(owner), &edits.pat_id, "?skip=2").await;
    assert_eq!(page["changes"].as_array().unwrap(), &all[2..].to_vec());
    let (_, page) = activity(app, Some(owner), &edits.pat_id, "?limit=1000&skip=10000").await;
    assert_eq!(page["changes"], json!([]));
    for query in ["?limit=1001", "?skip=10001", "?limit=ten", "?skip=-1"] {
        let answer = activity(app, Some(owner), &edits.pat_id, query).await;
        assert_error(answer, 400, "invalid_query");
    }
}

#[tokio::test]
async fn activity_is_read_from_the_writer_and_deleter_indexes() {
    use diesel::QueryableByName;
    use diesel::sql_types::{Int8, Text};
    use diesel_async::RunQueryDsl;
    #[derive(QueryableByName)]
    struct PlanLine {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }
    let edits = pat_edits_a_book().await;
    let mut conn = edits.app.pool.get().await.unwrap();
    // others' many writes and deletions on 2,000 entities the reader may
    // read, beside Pat's few: a scan of either would read them all
    diesel::sql_query(
        "INSERT INTO entities (db, id, created_at, created_by, viewers) \
         SELECT 'demo', 'other' || lpad(to_hex(g), 19, '0'), now(), $1, ARRAY[$1] \
         FROM generate_series(1, 2000) g",
    )
    .bind::<Text, _>(&edits.app.person)
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO property_values (db, id, entity_id, prop, string, created_at, created_by, deleted_at, deleted_by) \
         SELECT 'demo', lpad(to_hex(g), 24, '0'), 'other' || lpad(to_hex(g % 2000 + 1), 19, '0'), 'note', 'n', \
         now() - g * interval '1 second', 'writer' || (g % 100), CASE WHEN g % 2 = 0 THEN now() END, \
         CASE WHEN g % 2 = 0 THEN 'deleter' || (g % 100) END \
         FROM generate_series(1, 20000) g",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query("ANALYZE entities, property_values")
        .execute(&mut conn)
        .await
        .unwrap();
    let plan: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN {}", eds::db::activity::NEWEST_EVENTS))
        .bind::<Text, _>("demo")
        .bind::<Text, _>(&edits.pat_id)
        .bind::<Text, _>(&edits.app.person)
        .bind::<Int8, _>(200)
        .load(&mut conn)
        .await
        .unwrap();
    let text = plan.into_iter().map(|line| line.line).collect::<Vec<_>>().join("\n");
    for index in ["property_values_written_by", "property_values_deleted_by"] {
        assert!(text.contains(index), "{index} unused:\n{text}");
    }
    assert!(!text.contains("Seq Scan on property_values"), "{text}");
    // the page still reads right beside the others' rows
    let (status, body) = activity(&edits.app, Some(&edits.owner), &edits.pat_id, "").await;
    assert_eq!((status, body["changes"].as_array().unwrap().len()), (200, 3), "{body}");
}

#[tokio::test]
async fn both_routes_pass_the_middleware_of_the_other_entity_routes() {
    let (app, owner, book) = app_with_books(&[]).await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    for (method, route) in [("POST", "duplicate"), ("GET", "activity")] {
        let url = format!("{}/api/demo/entity/{id}/{route}", app.url);
        let preflight = app
            .http
            .request(reqwest::Method::OPTIONS, &url)
            .header("Origin", "https://app.example")
            .header("Access-Control-Request-Method", method)
            .send()
            .await
            .unwrap();
        assert_eq!(preflight.status(), 204, "{route}");
        assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let answer = app
            .http
            .request(method, &url)
            .header("Origin", "https://app.example")
            .bearer_auth(&owner)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{route}");
        assert_eq!(answer.headers()["access-control-allow-origin"], "*", "{route}");
        assert!(answer.headers().contains_key("x-request-id"), "{route}");
    }
}
