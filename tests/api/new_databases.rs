//! New databases and first logins, end to end: `GET /api/new/{db}`,
//! `POST /api/new` (and `PUT`) with a provider login, the daily limit, `eds db delete`,
//! the `add_user` person, and `user.name` across databases.

use crate::support;

use serde_json::{Value as Json, json};
use support::email_login::{access_token, app_with_mail, exchange, invite_bob, session_key};
use support::processes;

#[tokio::test]
async fn a_database_name_is_available_unless_malformed_reserved_or_taken() {
    let app = support::TestApp::start().await;
    for (name, expected) in [
        ("my_books", json!({"available": true})),
        ("ab", json!({"available": false, "reason": "format"})),
        ("Books", json!({"available": false, "reason": "format"})),
        ("admin", json!({"available": false, "reason": "reserved"})),
        ("demo", json!({"available": false, "reason": "taken"})),
    ] {
        let (status, body) = app.call("GET", &format!("/api/new/{name}"), None, None).await;
        assert_eq!((status, &body), (200, &expected), "{name}");
    }
}

#[tokio::test]
async fn a_new_login_creates_a_database_it_owns_and_the_next_refresh_lists_it() {
    let (app, sink) = app_with_mail(&[]).await;
    let token = access_token(&app, &sink, "founder@example.com", "", 0).await;
    let (status, body) = app.post("/api/new", &token, json!({"database": "my_books"})).await;
    assert_eq!((status, &body), (201, &json!({"db": "my_books"})));
    let (status, refreshed) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(status, 200, "{refreshed}");
    let person = refreshed["accounts"][0]["user"]["_id"].as_str().unwrap().to_owned();
    assert_eq!(refreshed["accounts"][0]["_id"], "my_books");
    let owner = refreshed["token"].as_str().unwrap();
    let (status, me) = app.get(&format!("/api/my_books/entity/{person}"), owner).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["entity"]["email"][0]["string"], "founder@example.com");
    let login = &me["entity"]["service_user"][0];
    assert_eq!(
        (login["string"].as_str(), login["provider"].as_str()),
        (Some("founder@example.com"), Some("e-mail"))
    );
    // the owner writes there
    let types = app
        .get("/api/my_books/entity?_type.string=entity&name.string=person", owner)
        .await
        .1;
    assert_eq!(types["count"], 1);
    let (status, _) = app
        .post(
            "/api/my_books/entity",
            owner,
            json!([{"type": "_type", "reference": types["entities"][0]["_id"]}, {"type": "name", "string": "Ann"}]),
        )
        .await;
    assert_eq!(status, 201);
    // and a later sign-in finds the database by the login
    let key = session_key(&app, &sink, "founder@example.com", &[], 1).await;
    let (_, again) = exchange(&app, &key, "").await;
    assert_eq!(again["accounts"][0]["_id"], "my_books");
}

#[tokio::test]
async fn only_a_provider_login_creates_a_database() {
    let app = support::TestApp::start().await;
    let (status, body) = app
        .call("POST", "/api/new", None, Some(json!({"database": "my_books"})))
        .await;
    assert_eq!(status, 401, "{body}");
    let key_token = app.owner_token().await;
    let (status, body) = app.post("/api/new", &key_token, json!({"database": "my_books"})).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")));
    let (_, available) = app.call("GET", "/api/new/my_books", None, None).await;
    assert_eq!(available["available"], true);
}

#[tokio::test]
async fn a_taken_malformed_or_reserved_name_is_refused_and_nothing_is_created() {
    let (app, sink) = app_with_mail(&[]).await;
    let token = access_token(&app, &sink, "founder@example.com", "", 0).await;
    for (name, status, code) in [
        ("demo", 409, "database_exists"),
        ("admin", 400, "invalid_database_name"),
        ("no", 400, "invalid_database_name"),
    ] {
        let (got, body) = app.post("/api/new", &token, json!({"database": name})).await;
        assert_eq!((got, body["error"].as_str()), (status, Some(code)), "{name}: {body}");
    }
    let (status, body) = app.post("/api/new", &token, json!({"name": "my_books"})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No accessible accounts"))
    );
}

#[tokio::test]
async fn a_login_creates_at_most_new_databases_per_day() {
    let (app, sink) = app_with_mail(&[("limits.new_databases_per_day", "2".to_owned())]).await;
    let token = access_token(&app, &sink, "founder@example.com", "", 0).await;
    for name in ["first_db", "second_db"] {
        assert_eq!(app.post("/api/new", &token, json!({"database": name})).await.0, 201);
    }
    let (status, body) = app.post("/api/new", &token, json!({"database": "third_db"})).await;
    assert_eq!((status, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    // another login has its own allowance
    let other = access_token(&app, &sink, "other@example.com", "", 1).await;
    assert_eq!(
        app.post("/api/new", &other, json!({"database": "third_db"})).await.0,
        201
    );
    // a day later the first login may again
    app.state.clock.advance(chrono::Duration::hours(25));
    let token = access_token(&app, &sink, "founder@example.com", "", 2).await;
    assert_eq!(
        app.post("/api/new", &token, json!({"database": "fourth_db"})).await.0,
        201
    );
}

#[tokio::test]
async fn eds_db_delete_removes_a_database_for_good_and_frees_its_name() {
    let (app, sink) = app_with_mail(&[]).await;
    let token = access_token(&app, &sink, "founder@example.com", "", 0).await;
    assert_eq!(
        app.post("/api/new", &token, json!({"database": "short_lived"})).await.0,
        201
    );
    let data = support::tempdir::Dir::new();
    let output = processes::eds(&app.database_url, &data.0)
        .args(["db", "delete", "short_lived"])
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let printed: Json = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["deleted"], "short_lived");
    assert!(printed["entities"].as_i64().unwrap() > 10, "{printed}");
    let (_, available) = app.call("GET", "/api/new/short_lived", None, None).await;
    assert_eq!(available["available"], true);
    let missing = processes::eds(&app.database_url, &data.0)
        .args(["db", "delete", "short_lived"])
        .output()
        .await
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));
}

/// Points demo's `add_user` at a new folder entity; answers the folder's id.
async fn add_user_folder(app: &support::TestApp, owner: &str) -> String {
    let folder_type = app.create_type(owner, "folder").await;
    let folder = app
        .create(owner, &folder_type, json!([{"type": "name", "string": "New users"}]))
        .await;
    let database = app.find(owner, "database", "demo").await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{database}"),
            owner,
            json!({"type": "add_user", "reference": folder}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    folder
}

#[tokio::test]
async fn a_first_login_to_a_database_with_add_user_gets_a_person_there() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    // without add_user, a login that is nobody in demo gets no token for it
    let key = session_key(&app, &sink, "walk-in@example.com", &[], 0).await;
    let (status, body) = exchange(&app, &key, "?db=demo").await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No accessible accounts"))
    );

    let folder = add_user_folder(&app, &owner).await;
    let key = session_key(&app, &sink, "walk-in@example.com", &[], 1).await;
    let (status, body) = exchange(&app, &key, "?db=demo").await;
    assert_eq!(status, 200, "{body}");
    let person = body["accounts"][0]["user"]["_id"].as_str().unwrap().to_owned();
    let (_, entity) = app.get(&format!("/api/demo/entity/{person}"), &owner).await;
    let entity = &entity["entity"];
    assert_eq!(entity["_parent"][0]["reference"], folder.as_str(), "{entity}");
    assert_eq!(entity["_inheritrights"][0]["boolean"], true);
    assert_eq!(entity["_editor"][0]["reference"], person.as_str());
    assert_eq!(entity["email"][0]["string"], "walk-in@example.com");
    assert_eq!(entity["service_user"][0]["provider"], "e-mail");
    // the person reads and edits itself with its token
    let token = body["token"].as_str().unwrap();
    assert_eq!(app.get(&format!("/api/demo/entity/{person}"), token).await.0, 200);
    // the next sign-in finds that person, and creates no other
    let key = session_key(&app, &sink, "walk-in@example.com", &[], 2).await;
    let (_, again) = exchange(&app, &key, "?db=demo").await;
    assert_eq!(again["accounts"][0]["user"]["_id"], person.as_str());
}

#[tokio::test]
async fn user_name_is_the_persons_name_in_the_first_database_by_name_that_has_one() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let token = access_token(&app, &sink, "bob@example.com", "", 0).await;
    // "aaa_first" sorts before "demo"; its person has no name (an e-mail login brings none)
    assert_eq!(
        app.post("/api/new", &token, json!({"database": "aaa_first"})).await.0,
        201
    );
    let (_, invite) = invite_bob(&app, &sink, &owner, 1).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 2).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={invite}")).await.0, 200);

    let key = session_key(&app, &sink, "bob@example.com", &[], 3).await;
    let (status, body) = exchange(&app, &key, "").await;
    assert_eq!(status, 200, "{body}");
    let dbs: Vec<&str> = body["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["_id"].as_str().unwrap())
        .collect();
    assert_eq!(dbs, ["aaa_first", "demo"]);
    assert_eq!(body["accounts"][0]["user"]["name"], Json::Null);
    assert_eq!(body["user"]["name"], "Bob");
}

#[tokio::test]
async fn put_api_new_creates_a_database_as_post_does_with_the_same_rules() {
    let (app, sink) = app_with_mail(&[]).await;
    let token = access_token(&app, &sink, "founder@example.com", "", 0).await;
    let (status, body) = app
        .call("PUT", "/api/new", Some(&token), Some(json!({"database": "put_books"})))
        .await;
    assert_eq!((status, &body), (201, &json!({"db": "put_books"})));
    let (_, refreshed) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(refreshed["accounts"][0]["_id"], "put_books", "{refreshed}");
    // the same refusals: a taken name, an API key's token, no token
    let (status, body) = app
        .call("PUT", "/api/new", Some(&token), Some(json!({"database": "put_books"})))
        .await;
    assert_eq!((status, body["error"].as_str()), (409, Some("database_exists")));
    let key_token = app.owner_token().await;
    let (status, _) = app
        .call(
            "PUT",
            "/api/new",
            Some(&key_token),
            Some(json!({"database": "other_books"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = app
        .call("PUT", "/api/new", None, Some(json!({"database": "other_books"})))
        .await;
    assert_eq!(status, 401);
}
