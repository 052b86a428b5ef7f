//! A repeat re-signs a file value's `upload` only while the caller may
//! still write the entity, the value is live and its object not yet stored;
//! reference names on a repeat follow the caller's current rights.

use super::*;
use support::Storage;

const FILE: &[u8] = b"the owner's report";

/// An app on S3 with an item the owner made Ann an editor of.
struct ItemWithEditor {
    app: TestApp,
    owner: String,
    item: String,
    /// Ann's person and token.
    ann: (String, String),
    /// Ann's `_editor` value on the item.
    right: String,
}

async fn item_with_editor() -> ItemWithEditor {
    let app = TestApp::start_with(Storage::S3, &[]).await;
    let owner = app.owner_token().await;
    let item_type = app.create_type(&owner, "item").await;
    let item = app
        .create(&owner, &item_type, json!([{"type": "name", "string": "thing"}]))
        .await;
    let (ann, key) = app.add_person(&owner, "Ann").await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{item}"),
            &owner,
            json!({"type": "_editor", "reference": ann}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let right = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let token = app.token_for(&key).await;
    ItemWithEditor {
        app,
        owner,
        item,
        ann: (ann, token),
        right,
    }
}

fn report() -> Json {
    json!([{"type": "report", "filename": "r.txt", "filesize": FILE.len(), "filetype": "text/plain"}])
}

/// PUTs `bytes` to an answer's upload with exactly its headers; answers the status.
async fn put(app: &TestApp, upload: &Json, bytes: &[u8]) -> u16 {
    let mut request = app.http.put(upload["url"].as_str().unwrap()).body(bytes.to_vec());
    for (name, value) in upload["headers"].as_object().unwrap() {
        let value = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        request = request.header(name.as_str(), value);
    }
    request.send().await.unwrap().status().as_u16()
}

/// The answer without its values' `upload`s.
fn without_uploads(mut answer: Json) -> Json {
    for value in answer["properties"].as_array_mut().unwrap() {
        value.as_object_mut().unwrap().remove("upload");
    }
    answer
}

/// The stored content of file value `id`, as `token` downloads it.
async fn content(app: &TestApp, token: &str, id: &str) -> Vec<u8> {
    let (status, value) = app.get(&format!("/api/demo/property/{id}"), token).await;
    assert_eq!(status, 200, "{value}");
    let response = app.http.get(value["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn a_repeat_after_the_editor_right_is_gone_carries_no_upload() {
    let ItemWithEditor {
        app,
        owner,
        item,
        ann: (_, ann),
        right,
    } = item_with_editor().await;
    let path = format!("/api/demo/entity/{item}");
    let (status, first) = send(&app, "POST", &path, &ann, "report-1", Some(&report())).await;
    assert_eq!(status, 200, "{first}");
    assert!(first["properties"][0]["upload"]["url"].is_string(), "{first}");
    // still an editor, the value live, nothing stored: a fresh upload
    let (status, repeat) = send(&app, "POST", &path, &ann, "report-1", Some(&report())).await;
    assert_eq!(status, 200, "{repeat}");
    assert!(repeat["properties"][0]["upload"]["url"].is_string(), "{repeat}");
    assert_eq!(without_uploads(repeat), without_uploads(first.clone()));

    let (status, body) = app.delete(&format!("/api/demo/property/{right}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    let (status, repeat) = send(&app, "POST", &path, &ann, "report-1", Some(&report())).await;
    assert_eq!(status, 200, "{repeat}");
    assert_eq!(
        repeat,
        without_uploads(first.clone()),
        "the first answer, without a way to write"
    );
    // the owner stores the content; Ann's repeats give her no way to replace it
    let value = first["properties"][0]["_id"].as_str().unwrap();
    let (status, owners) = send(&app, "POST", &path, &owner, "report-owner", Some(&report())).await;
    assert_eq!(status, 200, "{owners}");
    assert_eq!(put(&app, &owners["properties"][0]["upload"], FILE).await, 200);
    let owners_value = owners["properties"][0]["_id"].as_str().unwrap();
    let (_, repeat) = send(&app, "POST", &path, &ann, "report-1", Some(&report())).await;
    assert!(repeat["properties"][0].get("upload").is_none(), "{repeat}");
    assert_eq!(content(&app, &owner, owners_value).await, FILE);
    let (status, _) = app.get(&format!("/api/demo/property/{value}"), &owner).await;
    assert_eq!(status, 200, "Ann's value stays, empty");
}

#[tokio::test]
async fn a_repeat_carries_no_upload_once_the_object_is_stored_or_the_value_deleted() {
    let ItemWithEditor {
        app,
        owner,
        item,
        ann: (_, ann),
        ..
    } = item_with_editor().await;
    let path = format!("/api/demo/entity/{item}");
    let (status, stored) = send(&app, "POST", &path, &ann, "stored", Some(&report())).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(put(&app, &stored["properties"][0]["upload"], FILE).await, 200);
    let (status, repeat) = send(&app, "POST", &path, &ann, "stored", Some(&report())).await;
    assert_eq!(status, 200, "{repeat}");
    assert_eq!(repeat, without_uploads(stored.clone()));
    let stored_id = stored["properties"][0]["_id"].as_str().unwrap();
    assert_eq!(content(&app, &owner, stored_id).await, FILE);

    let (status, deleted) = send(&app, "POST", &path, &ann, "deleted", Some(&report())).await;
    assert_eq!(status, 200, "{deleted}");
    let deleted_id = deleted["properties"][0]["_id"].as_str().unwrap();
    let (status, body) = app.delete(&format!("/api/demo/property/{deleted_id}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    let (status, repeat) = send(&app, "POST", &path, &ann, "deleted", Some(&report())).await;
    assert_eq!(status, 200, "{repeat}");
    assert_eq!(repeat, without_uploads(deleted));
}

#[tokio::test]
async fn a_repeat_shows_no_name_of_a_reference_the_caller_can_no_longer_read() {
    let ItemWithEditor {
        app,
        owner,
        item,
        ann: (ann_person, ann),
        ..
    } = item_with_editor().await;
    let secret_type = app.create_type(&owner, "secret").await;
    let secret = app
        .create(&owner, &secret_type, json!([{"type": "name", "string": "Project X"}]))
        .await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{secret}"),
            &owner,
            json!({"type": "_viewer", "reference": ann_person}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let viewer = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let link = json!([{"type": "related", "reference": secret}]);
    let path = format!("/api/demo/entity/{item}");
    let (status, first) = send(&app, "POST", &path, &ann, "link", Some(&link)).await;
    assert_eq!(status, 200, "{first}");

    let (status, body) = app.delete(&format!("/api/demo/property/{viewer}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(app.get(&format!("/api/demo/entity/{secret}"), &ann).await.0, 404);
    let (status, repeat) = send(&app, "POST", &path, &ann, "link", Some(&link)).await;
    assert_eq!(status, 200, "{repeat}");
    let value = &repeat["properties"][0];
    assert_eq!(value["reference"], secret.as_str(), "{repeat}");
    assert!(
        value.get("string").is_none() && value.get("entity_type").is_none(),
        "{repeat}"
    );
}
