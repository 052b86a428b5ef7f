//! What bounds webhooks: their number checked in the writing transaction,
//! the attempt log's retention, and the changes no webhook of any type is
//! told of (webhooks themselves, rights that followed a parent's).

use std::time::Duration;

use diesel_async::RunQueryDsl;
use serde_json::json;

use super::receiver::Receiver;
use super::{WAIT, app, create_webhook, deliveries, webhook};

#[tokio::test]
async fn concurrent_creates_never_take_a_database_over_max_per_database() {
    let app = app(&[("webhooks.max_per_database", "3".to_owned())]).await;
    let token = app.owner_token().await;
    // sent together, they all pass the count made before the write
    let creates = (0..8).map(|_| create_webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None));
    let answers = futures_util::future::join_all(creates).await;

    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(created, 3, "{answers:?}");
    for (status, body) in answers.iter().filter(|(status, _)| *status != 201) {
        assert_eq!((*status, &body["error"]), (403, &json!("forbidden")), "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("at most 3 webhooks"),
            "{body}"
        );
    }
    let (_, listed) = app.get("/api/demo/entity?_type.string=webhook", &token).await;
    assert_eq!(listed["count"], 3, "nothing of a refused create is written");
}

#[tokio::test]
async fn delivery_attempts_older_than_the_retention_are_pruned() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let (hook, _) = webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None).await;
    let mut conn = app.pool.get().await.unwrap();
    for (message, hours_ago) in [("msg_old", 200), ("msg_recent", 1)] {
        diesel::sql_query(
            "INSERT INTO webhook_attempts (db, webhook_id, message_id, event, attempt, at, status, duration_ms) \
             VALUES ('demo', $1, $2, 'delete', 1, now() - make_interval(hours => $3), 200, 5)",
        )
        .bind::<diesel::sql_types::Text, _>(&hook)
        .bind::<diesel::sql_types::Text, _>(message)
        .bind::<diesel::sql_types::Integer, _>(hours_ago)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    assert_eq!(deliveries(&app, &token, &hook).await["count"], 2);

    let retention = app.state.webhooks.settings.attempt_retention_hours;
    assert_eq!(retention, 168, "a week by default");
    let pruned = eds::jobs::change_log::sweep_attempts(&app.pool, retention)
        .await
        .unwrap();

    assert_eq!(pruned, 1);
    let listed = deliveries(&app, &token, &hook).await;
    assert_eq!(listed["count"], 1, "{listed}");
    assert_eq!(listed["deliveries"][0]["id"], "msg_recent");
}

#[tokio::test]
async fn a_webhook_of_any_type_is_not_told_of_webhooks() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let webhook_type = app.find(&token, "entity", "webhook").await;
    let any_type = Receiver::start().await;
    let webhooks_only = Receiver::start().await;
    let all = ["create", "update", "delete"];
    let (hook, _) = webhook(&app, &token, &any_type.url(), &all, None).await;
    let (watching, _) = webhook(&app, &token, &webhooks_only.url(), &["create"], Some(&webhook_type)).await;

    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "secret", "string": "again"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (other, _) = webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None).await;
    let dune = app
        .create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    let received = any_type.wait_for(1, WAIT).await;
    let told = webhooks_only.wait_for(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    assert_eq!(any_type.received().len(), 1, "{:?}", any_type.received());
    assert_eq!(received[0].json()["entity"]["_id"], dune.as_str());
    let mut told: Vec<String> = told
        .iter()
        .map(|r| r.json()["entity"]["_id"].as_str().unwrap().to_owned())
        .collect();
    told.sort();
    let mut expected = vec![watching, other];
    expected.sort();
    assert_eq!(told, expected, "a webhook naming the webhook type is told");
}

#[tokio::test]
async fn rights_that_follow_a_parent_are_not_delivered() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let (reader, _) = app.add_person(&token, "Reader").await;
    let shelf = app
        .create(&token, &book, json!([{"type": "name", "string": "shelf"}]))
        .await;
    app.create(
        &token,
        &book,
        json!([{"type": "_parent", "reference": shelf}, {"type": "_inheritrights", "boolean": true}]),
    )
    .await;
    let receiver = Receiver::start().await;
    webhook(&app, &token, &receiver.url(), &["update"], None).await;

    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{shelf}"),
            &token,
            json!([{"type": "_viewer", "reference": reader}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let received = receiver.wait_for(1, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    assert_eq!(receiver.received().len(), 1, "{:?}", receiver.received());
    assert_eq!(received[0].json()["entity"]["_id"], shelf.as_str());
}
