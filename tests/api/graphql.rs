//! GraphQL per database (`/api/{db}/graphql`): the same lists as REST, the
//! field names, references, files, credentials, the request rules and the
//! bounds checked before any database work. Rights: `graphql_rights.rs`;
//! mutations: `graphql_writes.rs`.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

/// POSTs `query` with `variables`: the status and the GraphQL answer.
pub async fn gql(app: &TestApp, token: Option<&str>, query: &str, variables: Json) -> (u16, Json) {
    let body = json!({"query": query, "variables": variables});
    app.call("POST", "/api/demo/graphql", token, Some(body)).await
}

/// The ids of a list.
pub fn ids(list: &Json) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|entity| entity["_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The first error's code.
pub fn code(answer: &Json) -> &str {
    answer["errors"][0]["extensions"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn graphql_list_answers_same_ids_in_same_order_as_rest_for_the_same_filters() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let search = json!([{"type": "search", "boolean": true}]);
    app.define(&owner, &book, "title", "string", search).await;
    app.define(&owner, &book, "price", "number", json!([])).await;
    app.settle().await;
    for n in 0..14 {
        let title = format!("{} volume {}", ["dune", "emma", "ulysses"][n % 3], n % 5);
        let values = json!([{"type": "title", "string": title}, {"type": "price", "number": (n * 7) % 19}]);
        app.create(&owner, &book, values).await;
    }
    // entities of another type never show in the book list
    let other = app.create_type(&owner, "magazine").await;
    app.create(&owner, &other, json!([{"type": "title", "string": "dune weekly"}]))
        .await;
    let filters = [
        "",
        "price.number.gt=10",
        "price.number.lte=12&title.string.regex=^(dune|emma)",
        "title.string=emma volume 1",
        "price.number.in=0,7,14",
    ];
    let sorts = [
        None,
        Some("-price.number"),
        Some("title.string,-_id"),
        Some("price.number,title.string"),
    ];
    let words = [None, Some("dun vol")];
    let pages = [(None, None), (Some(3), Some(2))];
    let mut compared = 0;
    for filter in filters {
        for sort in sorts {
            for q in words {
                for (limit, skip) in pages {
                    let mut rest = vec![("_type.reference".to_owned(), book.clone())];
                    rest.extend(serde_urlencoded::from_str::<Vec<(String, String)>>(filter).unwrap());
                    let optional = [("sort", sort.map(str::to_owned)), ("q", q.map(str::to_owned))];
                    let paging = [
                        ("limit", limit.map(|l: i32| l.to_string())),
                        ("skip", skip.map(|s: i32| s.to_string())),
                    ];
                    for (name, value) in optional.iter().chain(&paging) {
                        if let Some(value) = value {
                            rest.push(((*name).to_owned(), value.clone()));
                        }
                    }
                    let path = format!("/api/demo/entity?{}", serde_urlencoded::to_string(&rest).unwrap());
                    let (status, listed) = app.get(&path, &owner).await;
                    assert_eq!(status, 200, "{listed}");
                    let query = "query($filter: String, $sort: String, $q: String, $limit: Int, $skip: Int) {
                        book(filter: $filter, sort: $sort, q: $q, limit: $limit, skip: $skip) { _id } }";
                    let variables = json!({"filter": filter, "sort": sort, "q": q, "limit": limit, "skip": skip});
                    let (status, answer) = gql(&app, Some(&owner), query, variables).await;
                    assert_eq!(status, 200, "{answer}");
                    assert_eq!(ids(&answer["data"]["book"]), ids(&listed["entities"]), "{path}");
                    compared += usize::from(!ids(&listed["entities"]).is_empty());
                }
            }
        }
    }
    assert!(compared > 40, "most combinations should list something, {compared} did");
}

#[tokio::test]
async fn graphql_field_names_replace_estonian_letters_and_number_collisions() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let first = app.create_type(&owner, "Õpik").await;
    let second = app.create_type(&owner, "õpik").await;
    app.create_type(&owner, "2. klass").await;
    app.create_type(&owner, "_entity").await;
    app.define(&owner, &first, "Hind-EUR", "number", json!([])).await;
    app.define(&owner, &first, "hind_eur", "number", json!([])).await;
    let (_, answer) = gql(
        &app,
        Some(&owner),
        "{ __schema { queryType { fields { name } } } }",
        json!({}),
    )
    .await;
    let roots: Vec<&str> = answer["data"]["__schema"]["queryType"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|field| field["name"].as_str().unwrap())
        .collect();
    for name in ["_entity", "_pik", "_pik_2", "_2__klass", "_entity_2"] {
        assert!(roots.contains(&name), "{name} in {roots:?}");
    }
    let mine = app
        .create(&owner, &first, json!([{"type": "Hind-EUR", "number": 5}]))
        .await;
    let theirs = app.create(&owner, &second, json!([])).await;
    let query = "{ _pik { _id hind_eur { number } hind_eur_2 { number } } _pik_2 { _id } }";
    let (status, answer) = gql(&app, Some(&owner), query, json!({})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(ids(&answer["data"]["_pik"]), [mine]);
    assert_eq!(answer["data"]["_pik"][0]["hind_eur"], json!([{"number": 5}]));
    assert_eq!(answer["data"]["_pik"][0]["hind_eur_2"], json!([]));
    assert_eq!(ids(&answer["data"]["_pik_2"]), [theirs]);
}

#[tokio::test]
async fn graphql_file_value_has_signed_url() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "photo", "file", json!([])).await;
    let file = json!({"type": "photo", "filename": "cover.jpg", "filesize": 3, "filetype": "image/jpeg"});
    let id = app.create(&owner, &book, json!([file])).await;
    let query = "query($id: String!) { _entity(_id: $id) { ... on T_book { photo { _id filename filesize url } } } }";
    let (status, answer) = gql(&app, Some(&owner), query, json!({"id": id})).await;
    assert_eq!(status, 200, "{answer}");
    let photo = &answer["data"]["_entity"]["photo"][0];
    assert_eq!(
        (photo["filename"].as_str(), photo["filesize"].as_f64()),
        (Some("cover.jpg"), Some(3.0))
    );
    let value_id = photo["_id"].as_str().unwrap();
    let (_, rest) = app.get(&format!("/api/demo/property/{value_id}"), &owner).await;
    let url = photo["url"].as_str().unwrap();
    let signed = |url: &str| url.split('?').next().map(str::to_owned);
    assert_eq!(signed(url), signed(rest["url"].as_str().unwrap()), "{rest}");
    assert!(
        url.starts_with(&format!("{}/storage/demo/{id}/", app.url)) && url.contains("signature="),
        "{url}"
    );
}

#[tokio::test]
async fn graphql_credentials_show_masked() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, _key) = app.add_person(&owner, "Pat").await;
    let query = "query($id: String!) { _entity(_id: $id) { _json } }";
    let (status, answer) = gql(&app, Some(&owner), query, json!({"id": person})).await;
    assert_eq!(status, 200, "{answer}");
    let keys = answer["data"]["_entity"]["_json"]["service_api_key"]
        .as_array()
        .unwrap();
    assert_eq!(keys.len(), 1, "{answer}");
    assert_eq!(keys[0]["string"], "***");
    let (_, listed) = gql(&app, Some(&owner), "{ person { _id _json } }", json!({})).await;
    let pat = listed["data"]["person"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["_id"] == person.as_str());
    assert_eq!(pat.unwrap()["_json"]["service_api_key"][0]["string"], "***", "{listed}");
    // nor is the plain key a filter that finds it
    let filter = format!("service_api_key.string={}", _key);
    let (_, found) = gql(
        &app,
        Some(&owner),
        "query($f: String) { person(filter: $f) { _id } }",
        json!({"f": filter}),
    )
    .await;
    assert_eq!(found["data"]["person"], json!([]), "{found}");
}

#[tokio::test]
async fn graphql_bad_token_is_401_with_www_authenticate() {
    let app = TestApp::start().await;
    let response = app
        .http
        .post(format!("{}/api/demo/graphql", app.url))
        .bearer_auth("not-a-token")
        .json(&json!({"query": "{ _entity(_id: \"0123456789abcdef01234567\") { _id } }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response
        .headers()
        .get("WWW-Authenticate")
        .expect("a challenge")
        .to_str()
        .unwrap();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    let body: Json = response.json().await.unwrap();
    assert_eq!(body["status"], 401, "{body}");
}

#[tokio::test]
async fn graphql_unparseable_document_is_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (status, answer) = gql(&app, Some(&owner), "{ _entity(_id: ", json!({})).await;
    assert_eq!((status, code(&answer)), (400, "graphql_parse_failed"), "{answer}");
    let (status, answer) = gql(&app, Some(&owner), "{ no_such_type { _id } }", json!({})).await;
    assert_eq!((status, code(&answer)), (400, "graphql_validation_failed"), "{answer}");
    let (status, answer) = app
        .call(
            "POST",
            "/api/demo/graphql",
            Some(&owner),
            Some(json!({"variables": {}})),
        )
        .await;
    assert_eq!((status, code(&answer)), (400, "invalid_json"), "{answer}");
}

#[tokio::test]
async fn graphql_mutation_by_get_is_405() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let mutation = "mutation { deleteEntity(_id: \"0123456789abcdef01234567\") }";
    let path = format!(
        "/api/demo/graphql?{}",
        serde_urlencoded::to_string([("query", mutation)]).unwrap()
    );
    let (status, answer) = app.get(&path, &owner).await;
    assert_eq!((status, code(&answer)), (405, "method_not_allowed"), "{answer}");
    let query = "query($id: String!) { _entity(_id: $id) { _id } }";
    let variables = json!({"id": app.person}).to_string();
    let path = format!(
        "/api/demo/graphql?{}",
        serde_urlencoded::to_string([("query", query), ("variables", &variables)]).unwrap()
    );
    let (status, answer) = app.get(&path, &owner).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"]["_entity"]["_id"], app.person.as_str());
}

#[tokio::test]
async fn graphql_two_operations_is_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let document = "query A { person { _id } } query B { person { _id } }";
    let body = json!({"query": document, "operationName": "A"});
    let (status, answer) = app.call("POST", "/api/demo/graphql", Some(&owner), Some(body)).await;
    assert_eq!((status, code(&answer)), (400, "too_many_operations"), "{answer}");
}

#[tokio::test]
async fn graphql_deep_or_wide_query_is_refused_before_database_work() {
    let app = TestApp::start().await;
    // `nosuchdb` does not exist: any database work answers 404, so a 400
    // `query_too_complex` was answered before any.
    let path = "/api/nosuchdb/graphql";
    let send = |query: &str| app.call("POST", path, None, Some(json!({"query": query})));
    let (status, answer) = send("{ person { _id } }").await;
    assert_eq!(status, 404, "{answer}");
    let wide = "{ person(limit: 2000) { _id name { string } _type { string } } }";
    let (status, answer) = send(wide).await;
    assert_eq!((status, code(&answer)), (400, "query_too_complex"), "{answer}");
    // aliases count each time: 26 lists of 100 entities at a cost of 5 each
    let aliased: String = ('a'..='z')
        .map(|a| format!("{a}: person {{ _id _type {{ string }} }} "))
        .collect();
    let (status, answer) = send(&format!("{{ {aliased} }}")).await;
    assert_eq!((status, code(&answer)), (400, "query_too_complex"), "{answer}");
    let deep = "{ _entity(_id: \"x\") { ... on T_book { a { entity { ... on T_book { a { entity { _id } } } } } } } }";
    let (status, answer) = send(deep).await;
    assert_eq!(status, 404, "five levels pass the depth limit of 8: {answer}");
    let deeper = "{ _entity(_id: \"x\") { a { entity { a { entity { a { entity { a { entity { _id } } } } } } } } } }";
    let (status, answer) = send(deeper).await;
    assert_eq!((status, code(&answer)), (400, "query_too_complex"), "{answer}");
    assert!(
        answer["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("deeper than 8"),
        "{answer}"
    );
}

#[tokio::test]
async fn graphql_introspection_works() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "author", "reference", json!([])).await;
    let (status, answer) = gql(&app, Some(&owner), INTROSPECTION, json!({})).await;
    assert_eq!(status, 200, "{answer}");
    let types = answer["data"]["__schema"]["types"].as_array().unwrap();
    let book_object = types.iter().find(|t| t["name"] == "T_book").expect("the book object");
    let author = book_object["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "author")
        .unwrap();
    assert_eq!(
        author["type"]["ofType"]["ofType"]["ofType"]["name"], "ReferenceValue",
        "{author}"
    );
    assert_eq!(answer["data"]["__schema"]["mutationType"]["name"], "Mutation");
}

#[tokio::test]
async fn graphql_introspection_answer_kept_follows_type_changes_and_views() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let type_names = |answer: &Json| -> Vec<String> {
        (answer["data"]["__schema"]["types"].as_array())
            .unwrap_or_else(|| panic!("types: {answer}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, first) = gql(&app, Some(&owner), INTROSPECTION, json!({})).await;
    let (_, again) = gql(&app, Some(&owner), INTROSPECTION, json!({})).await;
    assert_eq!(first, again, "the same schema answers the same");
    assert!(type_names(&first).contains(&"T_book".to_owned()));
    assert!(!type_names(&first).contains(&"T_magazine".to_owned()));

    app.create_type(&owner, "magazine").await;
    let (_, after) = gql(&app, Some(&owner), INTROSPECTION, json!({})).await;
    assert!(
        type_names(&after).contains(&"T_magazine".to_owned()),
        "a new type is introspected at once"
    );

    // a field of the same document over data is never served from the kept answer
    app.define(&owner, &book, "title", "string", json!([])).await;
    app.create(&owner, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;
    let mixed = "{ __typename book { title { string } } }";
    let (status, answer) = gql(&app, Some(&owner), mixed, json!({})).await;
    assert_eq!(
        (status, &answer["data"]["book"][0]["title"][0]["string"]),
        (200, &json!("Dune")),
        "{answer}"
    );

    // a caller who sees no types gets the schema of what it sees, not the owner's
    let (_, anonymous) = gql(&app, None, INTROSPECTION, json!({})).await;
    assert!(!type_names(&anonymous).contains(&"T_book".to_owned()), "{anonymous}");
}

/// The introspection query GraphiQL and most clients send.
const INTROSPECTION: &str = "query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}";
