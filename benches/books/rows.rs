//! The peer benchmark's rows: each row's requests to eds and to PocketBase,
//! and eds's mixed load.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};

use super::measure::Call;
use super::pocketbase::record;
use super::{Book, DB, books, vocabulary};

/// Ids and `code` values each rotating row cycles through.
pub const ROTATION: usize = 1_000;

fn query(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap()
}

/// A book as the body of eds's `POST /api/{db}/entity`.
pub fn eds_record(book_type: &str, book: &Book) -> Json {
    json!([
        {"type": "_type", "reference": book_type},
        {"type": "title", "string": book.title},
        {"type": "price", "number": book.price},
        {"type": "published", "date": book.published},
        {"type": "instock", "boolean": book.instock},
        {"type": "code", "string": book.code},
    ])
}

/// The rows' requests, for eds and PocketBase (none: eds alone).
pub struct Row {
    pub label: String,
    pub eds: Vec<Call>,
    pub pocketbase: Option<Vec<Call>>,
}

fn eds_list(query: &str) -> String {
    format!("/api/{DB}/entity?{query}")
}

fn pb_list(filter: &str, sort: Option<&str>) -> String {
    let mut pairs = vec![("filter", filter), ("perPage", "20")];
    if let Some(sort) = sort {
        pairs.push(("sort", sort));
    }
    format!("/api/collections/books/records?{}", query(&pairs))
}

/// Codes of the rotation: every `count / ROTATION`-th book.
fn rotating_codes(count: usize) -> Vec<String> {
    let step = (count / ROTATION).max(1);
    (0..ROTATION.min(count))
        .map(|k| format!("BK-{:07}", k * step))
        .collect()
}

/// Books to create, after the loaded ones in the same sequence, coded `NEW-`.
fn new_books(count: usize) -> Vec<Book> {
    books(count + ROTATION)
        .skip(count)
        .map(|book| Book {
            code: book.code.replace("BK-", "NEW-"),
            ..book
        })
        .collect()
}

/// eds's reads of the mixed row, parameters drawn from a fixed seed, with a
/// create every tenth request.
pub fn mixed_calls(count: usize, eds_ids: &[String], book_type: &str) -> Vec<Call> {
    let words = vocabulary();
    let codes = rotating_codes(count);
    let created = new_books(count);
    let mut rng = StdRng::seed_from_u64(11);
    (0..2_000)
        .map(|n| {
            if n % 10 == 9 {
                return Call::post(
                    format!("/api/{DB}/entity"),
                    eds_record(book_type, &created[n / 10 % created.len()]).to_string(),
                );
            }
            Call::get(match rng.gen_range(0..4) {
                0 => format!("/api/{DB}/entity/{}", eds_ids[rng.gen_range(0..eds_ids.len())]),
                1 => eds_list(&format!(
                    "_type.string=book&price.number.gt={}&sort=-price.number&limit=20",
                    rng.gen_range(980..999)
                )),
                2 => eds_list(&query(&[
                    (
                        "q",
                        &format!(
                            "{} {}",
                            words[rng.gen_range(0..words.len())],
                            words[rng.gen_range(0..words.len())]
                        ),
                    ),
                    ("limit", "20"),
                ])),
                _ => eds_list(&format!("code.string={}", codes[rng.gen_range(0..codes.len())])),
            })
        })
        .collect()
}

pub fn rows(count: usize, eds_ids: &[String], pb_ids: &[String], book_type: &str) -> Vec<Row> {
    // two words of a title in the middle of the sequence
    let title = books(count / 2 + 1).last().unwrap().title;
    let words: Vec<&str> = title.split(' ').collect();
    let codes = rotating_codes(count);
    let created = new_books(count);
    vec![
        Row {
            label: format!("get one by id ({} ids rotating)", eds_ids.len()),
            eds: eds_ids
                .iter()
                .map(|id| Call::get(format!("/api/{DB}/entity/{id}")))
                .collect(),
            pocketbase: Some(
                pb_ids
                    .iter()
                    .map(|id| Call::get(format!("/api/collections/books/records/{id}")))
                    .collect(),
            ),
        },
        Row {
            label: "`price > 990`, sorted by `-price`, 20 per page, with the total".to_owned(),
            eds: vec![Call::get(eds_list(
                "_type.string=book&price.number.gt=990&sort=-price.number&limit=20",
            ))],
            pocketbase: Some(vec![Call::get(pb_list("price > 990", Some("-price")))]),
        },
        Row {
            label: format!(
                "two-word search `{} {}`, 20 per page, with the total",
                words[0], words[1]
            ),
            eds: vec![Call::get(eds_list(&query(&[
                ("q", &format!("{} {}", words[0], words[1])),
                ("limit", "20"),
            ])))],
            pocketbase: Some(vec![Call::get(pb_list(
                &format!("title ~ '{}' && title ~ '{}'", words[0], words[1]),
                None,
            ))]),
        },
        Row {
            label: format!("equality on `code` ({} values rotating), with the total", codes.len()),
            eds: codes
                .iter()
                .map(|code| Call::get(eds_list(&format!("code.string={code}"))))
                .collect(),
            pocketbase: Some(
                codes
                    .iter()
                    .map(|code| Call::get(pb_list(&format!("code = '{code}'"), None)))
                    .collect(),
            ),
        },
        Row {
            label: "create one record".to_owned(),
            eds: created
                .iter()
                .map(|book| Call::post(format!("/api/{DB}/entity"), eds_record(book_type, book).to_string()))
                .collect(),
            pocketbase: Some(
                created
                    .iter()
                    .map(|book| Call::post("/api/collections/books/records".to_owned(), record(book).to_string()))
                    .collect(),
            ),
        },
        Row {
            label: "`group=instock.boolean`".to_owned(),
            eds: vec![Call::get(eds_list("_type.string=book&group=instock.boolean"))],
            pocketbase: None,
        },
    ]
}
