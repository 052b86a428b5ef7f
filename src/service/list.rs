//! The answer to a list query (`GET /api/{db}/entity`, the MCP tools
//! `search_entities` and `get_entity_type`): whole, from the answer cache when
//! it is on, or streamed a chunk at a time when the page is long.

use std::sync::Arc;

use bytes::Bytes;
use diesel_async::AsyncPgConnection;
use futures_util::StreamExt;
use futures_util::stream::LocalBoxStream;
use serde_json::Value as Json;

use crate::db::values::{EntityRow, RawDoc};
use crate::db::{Pool, generation};
use crate::error::{ApiError, ErrorCode};
use crate::query::ListQuery;
use crate::query::cache::AnswerKey;
use crate::query::sql::{self, ListResult};
use crate::service::bodies::entities::{EntityList, LIST_START, list_end};
use crate::service::replicas::Route;
use crate::service::{Caller, Service};
use crate::view::{self, TargetNames, shown};

/// The JSON body of a list answer: read whole, or a stream of its parts.
pub enum ListAnswer {
    Whole(Bytes),
    Streamed(LocalBoxStream<'static, Result<Bytes, ApiError>>),
}

impl ListAnswer {
    /// The whole body, a streamed one read to its end.
    pub async fn into_bytes(self) -> Result<Bytes, ApiError> {
        match self {
            ListAnswer::Whole(body) => Ok(body),
            ListAnswer::Streamed(mut parts) => {
                let mut body = Vec::new();
                while let Some(part) = parts.next().await {
                    body.extend_from_slice(&part?);
                }
                Ok(Bytes::from(body))
            }
        }
    }
}

/// `{"entities":[...],"count":N,"limit":L,"skip":S}` for the query string
/// `query_string` (without its `?`), as `caller` sees it.
pub async fn list(
    service: &Arc<Service>,
    caller: &Caller,
    db: &str,
    query_string: &str,
) -> Result<ListAnswer, ApiError> {
    service.require_database(db).await?;
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query_string)
        .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "Malformed query string"))?;
    let query = ListQuery::parse(&params)?;
    let person = caller.person_in(db);
    let mut route = service.read_route(db, caller)?;
    if sql::is_streamed(&query) {
        return streamed_list(service, &mut route, db.to_owned(), person.map(str::to_owned), query).await;
    }
    let query = &query;
    let body = match &service.answers {
        // The generation and the answer are read on the same server, whose
        // replay only moves on: an answer is never older than its key's
        // generation, so it never hides a write whose position led the read there.
        Some(answers) => {
            route
                .run(|pool| async move {
                    // databases are never removed while serving
                    let generation = generation::generation(&mut *pool.get().await?, db)
                        .await?
                        .unwrap_or_default();
                    let key = AnswerKey {
                        db: db.to_owned(),
                        generation,
                        person: person.map(str::to_owned),
                        query: query_string.to_owned(),
                    };
                    // The connection is taken only to compute, not while waiting for
                    // another caller's computation of the same answer.
                    let compute = async {
                        let _permit = service.expensive.admit(query).await?;
                        list_answer(&mut *pool.get().await?, db, person, query).await
                    };
                    answers.get_or_compute(key, compute).await
                })
                .await?
        }
        None => {
            route
                .run(|pool| async move {
                    let _permit = service.expensive.admit(query).await?;
                    list_answer(&mut *pool.get().await?, db, person, query).await
                })
                .await?
        }
    };
    Ok(ListAnswer::Whole(body))
}

/// The documents of the page of the list query string `query_string` (no
/// `group`), as `caller` sees them: what [`list`] answers under
/// `entities`, read a chunk at a time as a long page is streamed, and kept
/// as JSON values for the operations that look into them.
pub async fn documents(
    service: &Service,
    caller: &Caller,
    db: &str,
    query_string: &str,
) -> Result<Vec<Json>, ApiError> {
    service.require_database(db).await?;
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query_string)
        .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "Malformed query string"))?;
    let query = ListQuery::parse(&params)?;
    let person = caller.person_in(db);
    let mut route = service.read_route(db, caller)?;
    let query = &query;
    let mut chunks = route
        .run(|pool| async move {
            let _permit = service.expensive.admit(query).await?;
            sql::Chunks::start(&mut *pool.get().await?, db, person, query).await
        })
        .await?;
    // the later chunks on the server the first came from
    let pool = route.pool();
    let mut docs = Vec::new();
    loop {
        let _permit = service.expensive.admit(query).await?;
        let mut conn = pool.get().await?;
        let Some(entities) = chunks.next(&mut conn).await? else {
            return Ok(docs);
        };
        let mut part: Vec<Json> = entities
            .into_iter()
            .filter_map(|entity| listed_doc(entity, person, query))
            .collect();
        view::resolve_references(&mut conn, db, person, &mut part).await?;
        docs.append(&mut part);
    }
}

/// An entity's document as the caller sees it, with only the query's `props`;
/// `None` when the caller does not see it.
fn listed_doc(entity: EntityRow, person: Option<&str>, query: &ListQuery) -> Option<Json> {
    let mut doc = view::visible_doc(entity, person)?;
    if let Some(object) = doc.as_object_mut() {
        object.retain(|prop, _| query.lists(prop));
    }
    Some(doc)
}

/// The serialized answer to a list query.
async fn list_answer(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<Bytes, ApiError> {
    let body = match sql::run(conn, db, person, query).await? {
        ListResult::Page {
            entities,
            count,
            targets,
        } => page_body(&entities, count, &TargetNames::new(targets, person), person, query)?,
        ListResult::Groups { groups } => {
            // Rows carry only the `props` values of the group's first entity:
            // first entities are read a chunk at a time and only those kept.
            let mut rows = Vec::with_capacity(groups.len());
            for chunk in groups.chunks(sql::CHUNK as usize) {
                let firsts: Vec<String> = chunk.iter().map(|(first, _)| first.clone()).collect();
                let mut entities = sql::entities_by_id(conn, db, &firsts).await?;
                let mut chunk_rows = Vec::with_capacity(chunk.len());
                for (first, size) in chunk {
                    let Some(mut doc) = entities
                        .remove(first)
                        .and_then(|entity| listed_doc(entity, person, query))
                    else {
                        continue;
                    };
                    if let Some(object) = doc.as_object_mut() {
                        object.remove("_id");
                        if query.props.is_none() {
                            object.clear();
                        }
                        object.insert("_count".into(), Json::from(*size));
                    }
                    chunk_rows.push(doc);
                }
                view::resolve_references(conn, db, person, &mut chunk_rows).await?;
                rows.append(&mut chunk_rows);
            }
            let list = EntityList {
                count: rows.len() as u64,
                entities: rows,
                limit: query.limit,
                skip: query.skip,
            };
            serde_json::to_vec(&list).expect("JSON values serialize")
        }
    };
    Ok(Bytes::from(body))
}

/// A page's answer: its entities as the caller sees them, each written from
/// its document's text (`view::shown`), and the count of all matches.
fn page_body(
    entities: &[EntityRow<RawDoc>],
    count: i64,
    names: &TargetNames,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<Vec<u8>, ApiError> {
    let mut body = LIST_START.to_vec();
    let mut written = 0;
    for entity in entities {
        let Some(level) = entity.view_level(person) else {
            continue;
        };
        if written > 0 {
            body.push(b',');
        }
        shown::write(entity, level, |prop| query.lists(prop), names, &mut body)?;
        written += 1;
    }
    let count: u64 = count.try_into().unwrap_or_default();
    body.extend_from_slice(list_end(count, query.limit, query.skip).as_bytes());
    Ok(body)
}

/// A page longer than a chunk, answered as it is read: each chunk takes a
/// connection (and an expensive query's permit) for itself and is written to
/// the body as soon as it is read, so memory holds one chunk whatever the
/// limit, and slow readers hold no connection. The answer is the same as
/// [`list_answer`]'s, but not cached. The first chunk is read before
/// answering, so a query failing at once answers its error; a later failure
/// aborts the body (never a 200 whose JSON looks whole).
async fn streamed_list(
    service: &Arc<Service>,
    route: &mut Route<'_>,
    db: String,
    person: Option<String>,
    query: ListQuery,
) -> Result<ListAnswer, ApiError> {
    let (db_name, person_name, listed) = (db.as_str(), person.as_deref(), &query);
    let chunks = route
        .run(|pool| async move {
            let _permit = service.expensive.admit(listed).await?;
            sql::Chunks::start(&mut *pool.get().await?, db_name, person_name, listed).await
        })
        .await?;
    let mut page = StreamedPage {
        service: service.clone(),
        // the later chunks on the server the first came from
        pool: route.pool().clone(),
        db,
        person,
        query,
        chunks,
        written: 0,
        finished: false,
    };
    let mut first = LIST_START.to_vec();
    first.extend_from_slice(&page.next_part().await?.unwrap_or_default());
    let rest = futures_util::stream::unfold(page, |mut page| async move {
        match page.next_part().await {
            Ok(part) => part.map(|part| (Ok(part), page)),
            Err(error) => {
                tracing::warn!(%error, "list answer aborted after its first chunk");
                page.finished = true;
                Some((Err(error), page))
            }
        }
    });
    let body = futures_util::stream::once(async { Ok::<_, ApiError>(Bytes::from(first)) }).chain(rest);
    Ok(ListAnswer::Streamed(body.boxed_local()))
}

/// The state of a streamed answer between its parts.
struct StreamedPage {
    service: Arc<Service>,
    pool: Pool,
    db: String,
    person: Option<String>,
    query: ListQuery,
    chunks: sql::Chunks,
    /// Entities written so far.
    written: usize,
    finished: bool,
}

impl StreamedPage {
    /// The next part of the body: a chunk of entities, then the rest of the
    /// envelope; `None` after it.
    async fn next_part(&mut self) -> Result<Option<Bytes>, ApiError> {
        if self.finished {
            return Ok(None);
        }
        let _permit = self.service.expensive.admit(&self.query).await?;
        let mut conn = self.pool.get().await?;
        let mut part = Vec::new();
        match self.chunks.next(&mut conn).await? {
            Some(entities) => {
                let person = self.person.as_deref();
                let mut docs: Vec<Json> = entities
                    .into_iter()
                    .filter_map(|entity| listed_doc(entity, person, &self.query))
                    .collect();
                view::resolve_references(&mut conn, &self.db, person, &mut docs).await?;
                for doc in docs {
                    if self.written > 0 {
                        part.push(b',');
                    }
                    serde_json::to_writer(&mut part, &doc).expect("JSON values serialize");
                    self.written += 1;
                }
            }
            None => {
                let count = self.chunks.count(&mut conn).await?;
                part.extend_from_slice(list_end(count, self.query.limit, self.query.skip).as_bytes());
                self.finished = true;
            }
        }
        Ok(Some(Bytes::from(part)))
    }
}
