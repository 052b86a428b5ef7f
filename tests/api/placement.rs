//! Databases placed on several PostgreSQL clusters, end to end, against a
//! second real primary: a database placed by `database.placement` served
//! with the same API, `eds db create --cluster` and `eds db list`, a sign-in
//! whose person is in databases on two clusters, and `eds db move` under a
//! load of writes through two `eds` processes.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value as Json, json};
use support::clusters::fresh_second_database;
use support::email_login::{access_token, app_with_mail, exchange, session_key};
use support::processes::{self, call_json, login, serve_logged};
use support::{TestApp, fresh_database, tempdir};

use crate::webhooks::receiver::{Answer, Receiver};

/// Runs `eds ARGS` on the home cluster at `home` with the environment
/// `env`; answers its JSON lines, failing the test when it fails.
async fn eds(home: &str, dir: &tempdir::Dir, env: &[(&str, &str)], args: &[&str]) -> Vec<Json> {
    let output = processes::eds(home, &dir.0)
        .envs(env.iter().copied())
        .args(args)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "eds {args:?}: {stderr}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

/// One number a statement answers on the PostgreSQL database at `url`.
async fn scalar(url: &str, sql: &str, db: &str) -> i64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.query_one(sql, &[&db]).await.unwrap().get(0)
}

async fn entities_on(url: &str, db: &str) -> i64 {
    scalar(url, "SELECT count(*) FROM entities WHERE db = $1", db).await
}

/// The password of a cluster URL, as it must never be shown.
fn password_of(url: &str) -> String {
    url::Url::parse(url).unwrap().password().unwrap().to_owned()
}

#[tokio::test]
async fn a_database_placed_by_the_seed_lives_on_its_cluster_and_is_served_with_the_same_api() {
    let (home, second, dir) = (fresh_database(), fresh_second_database(), tempdir::Dir::new());
    let seed = json!({"far_away": second}).to_string();
    let env = [("EDS__DATABASE__PLACEMENT", seed.as_str())];
    let created = eds(
        &home,
        &dir,
        &env,
        &["db", "create", "far_away", "--email", "far@example.com"],
    )
    .await;
    eds(
        &home,
        &dir,
        &env,
        &["db", "create", "near_by", "--email", "near@example.com"],
    )
    .await;
    assert_eq!(
        (
            entities_on(&second, "far_away").await > 0,
            entities_on(&home, "far_away").await
        ),
        (true, 0)
    );
    assert_eq!(
        (
            entities_on(&home, "near_by").await > 0,
            entities_on(&second, "near_by").await
        ),
        (true, 0)
    );

    let (_server, base, _log) = serve_logged(&home, &dir.0, &env).await;
    let http = reqwest::Client::new();
    let key = created[0]["api_key"].as_str().unwrap();
    let auth = call_json(&http, &format!("{base}/api/auth?db=far_away"), key, None).await;
    assert_eq!(auth["accounts"][0]["_id"], "far_away", "{auth}");
    let token = auth["token"].as_str().unwrap();
    let types = format!("{base}/api/far_away/entity?_type.string=entity&name.string=person");
    let person_type = call_json(&http, &types, token, None).await["entities"][0]["_id"].clone();
    let body = json!([{"type": "_type", "reference": person_type}, {"type": "name", "string": "Faraway Fay"}]);
    let written = call_json(&http, &format!("{base}/api/far_away/entity"), token, Some(&body)).await;
    let id = written["_id"].as_str().expect("created");
    let read = call_json(&http, &format!("{base}/api/far_away/entity/{id}"), token, None).await;
    assert_eq!(read["entity"]["name"][0]["string"], "Faraway Fay");
    assert_eq!(
        scalar(
            &second,
            "SELECT count(*) FROM entities WHERE db = $1 AND name = 'Faraway Fay'",
            "far_away"
        )
        .await,
        1
    );
    for (name, available) in [("far_away", false), ("near_by", false), ("not_yet_made", true)] {
        let answer = http.get(format!("{base}/api/new/{name}")).send().await.unwrap();
        let answer: Json = answer.json().await.unwrap();
        assert_eq!(answer["available"], available, "{name}: {answer}");
    }
}

#[tokio::test]
async fn eds_db_list_says_where_each_database_lives_with_the_password_masked() {
    let (home, second, dir) = (fresh_database(), fresh_second_database(), tempdir::Dir::new());
    eds(
        &home,
        &dir,
        &[],
        &["db", "create", "placed_here", "--email", "a@example.com"],
    )
    .await;
    let args = [
        "db",
        "create",
        "placed_there",
        "--email",
        "b@example.com",
        "--cluster",
        &second,
    ];
    eds(&home, &dir, &[], &args).await;
    let listed = eds(&home, &dir, &[], &["db", "list"]).await;
    let password = password_of(&second);
    let masked = second.replace(&password, "****");
    assert_eq!(
        listed
            .iter()
            .map(|line| (line["database"].clone(), line["cluster"].clone()))
            .collect::<Vec<_>>(),
        [
            (json!("placed_here"), json!("home")),
            (json!("placed_there"), json!(masked))
        ]
    );
    assert!(listed.iter().all(|line| line["entities"].as_i64() > Some(0)));
    assert!(!listed.iter().any(|line| line.to_string().contains(&password)));
    assert_eq!(entities_on(&home, "placed_there").await, 0);
}

#[tokio::test]
async fn a_database_moved_back_to_the_home_cluster_loses_its_placement() {
    let (home, second, dir) = (fresh_database(), fresh_second_database(), tempdir::Dir::new());
    let args = [
        "db",
        "create",
        "round_trip",
        "--email",
        "r@example.com",
        "--cluster",
        &second,
    ];
    let created = eds(&home, &dir, &[], &args).await;
    let entities = entities_on(&second, "round_trip").await;
    let moved = eds(&home, &dir, &[], &["db", "move", "round_trip", &home]).await;
    let masked = second.replace(&password_of(&second), "****");
    assert_eq!((&moved[0]["from"], &moved[0]["to"]), (&json!(masked), &json!("home")));
    assert_eq!(
        (
            entities_on(&home, "round_trip").await,
            entities_on(&second, "round_trip").await
        ),
        (entities, 0)
    );
    assert_eq!(
        scalar(&home, "SELECT count(*) FROM placements WHERE db = $1", "round_trip").await,
        0
    );
    let listed = eds(&home, &dir, &[], &["db", "list"]).await;
    assert_eq!(listed[0]["cluster"], "home");
    // the owner's key still signs in, now on the home cluster
    let (_server, base, _log) = serve_logged(&home, &dir.0, &[]).await;
    let key = created[0]["api_key"].as_str().unwrap();
    let auth = call_json(
        &reqwest::Client::new(),
        &format!("{base}/api/auth?db=round_trip"),
        key,
        None,
    )
    .await;
    assert_eq!(auth["accounts"][0]["_id"], "round_trip", "{auth}");
}

#[tokio::test]
async fn eds_db_create_refuses_a_name_a_database_on_another_cluster_holds() {
    let (home, second, dir) = (fresh_database(), fresh_second_database(), tempdir::Dir::new());
    let args = [
        "db",
        "create",
        "only_once",
        "--email",
        "b@example.com",
        "--cluster",
        &second,
    ];
    eds(&home, &dir, &[], &args).await;
    let again = processes::eds(&home, &dir.0)
        .args(["db", "create", "only_once", "--email", "c@example.com"])
        .output()
        .await
        .unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists"));
    assert_eq!(entities_on(&home, "only_once").await, 0);
}

#[tokio::test]
async fn a_login_whose_person_is_in_databases_on_two_clusters_signs_in_to_both() {
    let second = fresh_second_database();
    let seed = json!({"far_books": second}).to_string();
    let (app, sink) = app_with_mail(&[("database.placement", seed)]).await;
    // as `eds serve` does before serving
    let placement = std::collections::BTreeMap::from([("far_books".to_owned(), second.clone())]);
    eds::db::placement::prepare(&placement, &app.state.pool, true)
        .await
        .unwrap();
    app.state.clusters.reload().await.unwrap();

    let token = access_token(&app, &sink, "ann@example.com", "", 0).await;
    for name in ["far_books", "near_books"] {
        let (status, body) = app.post("/api/new", &token, json!({"database": name})).await;
        assert_eq!((status, &body), (201, &json!({"db": name})));
    }
    assert_eq!(
        (
            entities_on(&second, "far_books").await > 0,
            entities_on(&app.database_url, "far_books").await
        ),
        (true, 0)
    );
    let listed = |answer: &Json| -> Vec<Json> {
        answer["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|account| account["_id"].clone())
            .collect()
    };
    let (status, refreshed) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(listed(&refreshed), [json!("far_books"), json!("near_books")]);
    // a new sign-in finds the person in both, each on its cluster
    let key = session_key(&app, &sink, "ann@example.com", &[], 1).await;
    let (status, signed_in) = exchange(&app, &key, "").await;
    assert_eq!(status, 200, "{signed_in}");
    assert_eq!(listed(&signed_in), [json!("far_books"), json!("near_books")]);
    let far_token = signed_in["token"].as_str().unwrap();
    let far_person = signed_in["accounts"][0]["user"]["_id"].as_str().unwrap();
    let (status, me) = app.get(&format!("/api/far_books/entity/{far_person}"), far_token).await;
    assert_eq!(
        (status, &me["entity"]["email"][0]["string"]),
        (200, &json!("ann@example.com"))
    );
    let (_, name_check) = app.call("GET", "/api/new/far_books", None, None).await;
    assert_eq!(name_check, json!({"available": false, "reason": "taken"}));
}

/// Acknowledged writes of a load: `(entity id, name)`.
type Acknowledged = Vec<(String, String)>;

/// Creates persons named `{who}-{n}` through the server at `base` until
/// `stop`, one at a time; a 503 (the move's pause at its limit) is retried
/// after its `Retry-After`. Answers the acknowledged ones; any other
/// answer fails the test.
async fn write_until(
    base: String,
    token: String,
    person_type: Json,
    who: String,
    stop: Arc<AtomicBool>,
) -> Acknowledged {
    let http = reqwest::Client::new();
    let mut acknowledged = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let name = format!("{who}-{n}");
        let body = json!([{"type": "_type", "reference": person_type}, {"type": "name", "string": name}]);
        let response = http
            .post(format!("{base}/api/demo/entity"))
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .unwrap();
        match response.status().as_u16() {
            201 => {
                let written: Json = response.json().await.unwrap();
                acknowledged.push((written["_id"].as_str().unwrap().to_owned(), name));
                n += 1;
            }
            503 => {
                assert!(response.headers().contains_key("retry-after"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("write {name} answered {other}: {}", response.text().await.unwrap()),
        }
    }
    acknowledged
}

#[tokio::test]
async fn a_database_moved_under_a_load_of_writes_keeps_every_acknowledged_write_and_both_servers_follow() {
    let app = TestApp::start().await;
    let (second, dir) = (fresh_second_database(), tempdir::Dir::new());
    let (_other, other_base, _log) = serve_logged(&app.database_url, &dir.0, &[]).await;
    let http = reqwest::Client::new();
    let tokens = [app.owner_token().await, login(&http, &other_base, &app.key).await];
    let person_type = json!(app.find(&tokens[0], "entity", "person").await);
    let owner_before = app.get(&format!("/api/demo/entity/{}", app.person), &tokens[0]).await;
    let log_before = scalar(
        &app.database_url,
        "SELECT max(id) FROM change_log WHERE db = $1",
        "demo",
    )
    .await;
    let logged_before = scalar(
        &app.database_url,
        "SELECT count(*) FROM change_log WHERE db = $1",
        "demo",
    )
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for (server, (base, token)) in [(app.url.clone(), &tokens[0]), (other_base.clone(), &tokens[1])]
        .into_iter()
        .enumerate()
    {
        for writer in 0..2 {
            let who = format!("s{server}w{writer}");
            load.push(tokio::spawn(write_until(
                base.clone(),
                token.clone(),
                person_type.clone(),
                who,
                stop.clone(),
            )));
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let moved = eds(&app.database_url, &dir, &[], &["db", "move", "demo", &second]).await;
    // the old copy is removed: every write since goes to the new cluster
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    let mut acknowledged = Vec::new();
    for writer in load {
        acknowledged.extend(writer.await.unwrap());
    }
    let pause = moved[0]["pause_ms"].as_f64().unwrap();
    println!("moved {} rows; writes paused {pause:.1} ms", moved[0]["rows"]);
    assert_eq!(moved[0]["to"], second.replace(&password_of(&second), "****"));
    assert!(acknowledged.len() > 20, "the load wrote {}", acknowledged.len());

    assert_eq!(
        entities_on(&app.database_url, "demo").await,
        0,
        "the old copy is removed"
    );
    assert_eq!(
        scalar(
            &app.database_url,
            "SELECT count(*) FROM databases WHERE name = $1",
            "demo"
        )
        .await,
        0
    );
    let stored = scalar(
        &second,
        "SELECT count(*) FROM entities WHERE db = $1 AND name ~ '^s[01]w'",
        "demo",
    )
    .await;
    assert_eq!(stored as usize, acknowledged.len(), "every acknowledged write, once");
    for (base, token) in [(app.url.clone(), &tokens[0]), (other_base.clone(), &tokens[1])] {
        for (id, name) in &acknowledged {
            let read = call_json(&http, &format!("{base}/api/demo/entity/{id}"), token, None).await;
            assert_eq!(read["entity"]["name"][0]["string"], json!(name), "{base}: {read}");
        }
    }
    let owner_after = app.get(&format!("/api/demo/entity/{}", app.person), &tokens[0]).await;
    assert_eq!(owner_before, owner_after);
    // the change log came with its ids, and continues past its old highest
    let copied = format!("SELECT count(*) FROM change_log WHERE db = $1 AND id <= {log_before}");
    assert_eq!(scalar(&second, &copied, "demo").await, logged_before);
    let logged = scalar(&second, "SELECT count(*) FROM change_log WHERE db = $1", "demo").await;
    assert_eq!(logged as usize, logged_before as usize + acknowledged.len());
}

#[tokio::test]
async fn an_event_waiting_in_the_outbox_is_delivered_from_the_new_cluster_after_a_move_with_its_message_id() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[
            ("webhooks.allow_private_targets", "true".to_owned()),
            ("webhooks.retry_base_ms", "100".to_owned()),
            ("webhooks.poll_ms", "50".to_owned()),
        ],
    )
    .await;
    let (second, dir) = (fresh_second_database(), tempdir::Dir::new());
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Answer::status(503));
    let book = app.create_type(&token, "book").await;
    let (hook, secret) = crate::webhooks::webhook(&app, &token, &receiver.url(), &["create"], Some(&book)).await;
    let dune = app
        .create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    receiver.wait_for(1, Duration::from_secs(20)).await;

    // the new cluster's outbox has numbered other databases' events
    let other_events = "SELECT setval(pg_get_serial_sequence('webhook_outbox', 'id'), 1000 + length($1))";
    scalar(&second, other_events, "demo").await;
    eds(&app.database_url, &dir, &[], &["db", "move", "demo", &second]).await;
    assert_eq!(
        scalar(&second, "SELECT count(*) FROM webhook_outbox WHERE db = $1", "demo").await,
        1
    );
    let tried = receiver.count();
    receiver.otherwise(Answer::status(200));
    let received = receiver.wait_for(tried + 1, Duration::from_secs(20)).await;
    let delivered = received.last().unwrap();
    assert_eq!(
        (
            delivered.json()["event"].as_str(),
            delivered.json()["entity"]["_id"].as_str()
        ),
        (Some("create"), Some(dune.as_str())),
        "{:?}",
        delivered.json()
    );
    assert!(delivered.signed_with(&secret));
    assert_eq!(
        delivered.json()["id"],
        received[0].json()["id"],
        "a retry after the move is the same message to its receiver"
    );
    for _ in 0..100 {
        if scalar(&second, "SELECT count(*) FROM webhook_outbox WHERE db = $1", "demo").await == 0 {
            let (status, listed) = app.get(&format!("/api/demo/entity/{hook}/deliveries"), &token).await;
            assert_eq!(
                (status, listed["deliveries"][0]["status"].as_i64()),
                (200, Some(200)),
                "{listed}"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the event stayed in the new cluster's outbox");
}

/// The README's figure: how long a database's writes pause while
/// `eds db move` copies it, for 100,000 entities (800,000 values). Run with
/// `cargo test --test api placement::the_write_pause -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: loads 100,000 entities"]
async fn the_write_pause_of_moving_a_100000_entity_database() {
    const COUNT: usize = 100_000;
    let (home, second, dir) = (fresh_database(), fresh_second_database(), tempdir::Dir::new());
    let pool = eds::db::pool(&home, 2, 0).unwrap();
    let owner = eds::db::databases::create(&pool, "big_one", "big@example.com", "Big")
        .await
        .unwrap()
        .person_id;
    let person_type = scalar_text(
        &home,
        "SELECT id FROM entities WHERE db = $1 AND name = 'person'",
        "big_one",
    )
    .await;
    // the seed as an export, the entities appended as the write path stores them, all imported
    let mut file = Vec::new();
    let mut header = eds::cli::export::export(&pool, "big_one", &mut file).await.unwrap();
    let created = json!({"at": chrono::Utc::now(), "by": owner});
    let value = |prop: &str, field: &str, content: Json| {
        let mut value = json!({"_id": eds::model::ids::new_id(), "type": prop, "created": created});
        value[field] = content;
        value
    };
    for n in 0..COUNT {
        let mut when = value("_created", "reference", json!(owner));
        when["datetime"] = created["at"].clone();
        let values = [
            value("_type", "reference", json!(person_type)),
            value("name", "string", json!(format!("person {n}"))),
            value("email", "string", json!(format!("p{n}@example.com"))),
            value("_owner", "reference", json!(owner)),
            when,
        ];
        header.entities += 1;
        header.values += values.len() as u64;
        let line = json!({"_id": eds::model::ids::new_id(), "created": created, "values": values});
        serde_json::to_writer(&mut file, &line).unwrap();
        file.push(b'\n');
    }
    let header_end = file.iter().position(|b| *b == b'\n').unwrap();
    let mut input = serde_json::to_vec(&header).unwrap();
    input.extend_from_slice(&file[header_end..]);
    let (client, connection) = tokio_postgres::connect(&home, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    for table in ["property_values", "entities"] {
        client
            .execute(&format!("DELETE FROM {table} WHERE db = $1"), &[&"big_one"])
            .await
            .unwrap();
    }
    eds::cli::import::import(&pool, "big_one", std::io::Cursor::new(input))
        .await
        .unwrap();
    let entities = entities_on(&home, "big_one").await;
    let moved = eds(&home, &dir, &[], &["db", "move", "big_one", &second]).await;
    println!(
        "moved {entities} entities ({} rows): writes paused {:.0} ms",
        moved[0]["rows"], moved[0]["pause_ms"]
    );
    assert_eq!(entities_on(&second, "big_one").await, entities);
    assert_eq!(entities_on(&home, "big_one").await, 0);
}

async fn scalar_text(url: &str, sql: &str, db: &str) -> String {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.query_one(sql, &[&db]).await.unwrap().get(0)
}

#[tokio::test]
async fn a_cluster_that_does_not_answer_is_skipped_by_sign_in_refresh_and_name_checks() {
    let app = TestApp::start().await;
    let nowhere = "postgres://postgres:secret@127.0.0.1:1/gone";
    eds::db::placement::place(&mut app.pool.get().await.unwrap(), "ghost_town", Some(nowhere))
        .await
        .unwrap();
    app.state.clusters.reload().await.unwrap();

    let token = app.owner_token().await;
    let (status, refreshed) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(
        (status, &refreshed["accounts"][0]["_id"]),
        (200, &json!("demo")),
        "{refreshed}"
    );
    let (status, name) = app.call("GET", "/api/new/fresh_name", None, None).await;
    assert_eq!((status, name), (200, json!({"available": true})));
    let (status, body) = app.call("GET", "/api/ghost_town/entity", None, None).await;
    assert_eq!((status, body["status"].as_i64()), (503, Some(503)), "{body}");
    assert!(!body.to_string().contains("secret"));
}

#[tokio::test]
async fn a_second_process_reads_from_the_new_cluster_within_5_s_of_the_switch() {
    let app = TestApp::start().await;
    let (second, dir) = (fresh_second_database(), tempdir::Dir::new());
    let (_other, other_base, _log) = serve_logged(&app.database_url, &dir.0, &[]).await;
    let http = reqwest::Client::new();
    let (token, other_token) = (app.owner_token().await, login(&http, &other_base, &app.key).await);
    let person_type = app.find(&token, "entity", "person").await;
    let read_there = |id: &str| format!("{other_base}/api/demo/entity/{id}");
    assert_eq!(
        call_json(&http, &read_there(&app.person), &other_token, None).await["entity"]["_id"],
        json!(app.person)
    );

    let home = &app.database_url;
    eds::db::placement_copy::copy_and_switch(&app.pool, home, "demo", home, &second)
        .await
        .unwrap();
    let switched = std::time::Instant::now();
    // written after the switch, so on the new cluster only (the old copy stays until removed)
    let id = app
        .create(&token, &person_type, json!([{"type": "name", "string": "After"}]))
        .await;
    assert_eq!(
        scalar(
            &second,
            "SELECT count(*) FROM entities WHERE db = $1 AND name = 'After'",
            "demo"
        )
        .await,
        1
    );
    assert_eq!(
        scalar(
            home,
            "SELECT count(*) FROM entities WHERE db = $1 AND name = 'After'",
            "demo"
        )
        .await,
        0
    );
    loop {
        let read = http
            .get(read_there(&id))
            .bearer_auth(&other_token)
            .send()
            .await
            .unwrap();
        if read.status() == 200 {
            break;
        }
        assert!(
            switched.elapsed() < Duration::from_secs(5),
            "the other process still reads the old copy"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("the other process followed within {:?}", switched.elapsed());
}
