//! Sign-in: short-lived state (`sign_in_states`) and the login methods
//! (`service_user` values) a login is matched against in every database.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use crate::auth::login::{PASSKEY_PROVIDER, StoredPasskey};
use crate::db::databases;
use crate::db::schema::sign_in_states;
use crate::db::values;
use crate::model::LOGIN_PROPERTY;
use crate::model::stored::ValueRow;
use crate::rights::places_new_persons;

/// The property of a database's own entity naming where the persons of new
/// logins go.
const ADD_USER_PROPERTY: &str = "add_user";

/// One piece of state being issued: `id` is the SHA-256 of its token or a
/// JWT's `jti`, never a token itself.
pub struct Issued {
    pub id: String,
    pub kind: &'static str,
    pub client_ip: String,
    pub data: Json,
    pub expires_at: DateTime<Utc>,
}

/// Writes `issued` unless its address already holds `max_pending` pending
/// states (unused and unexpired); answers whether it was written. State
/// bound to no address (OAuth codes) is never refused. The issues of one
/// address take turns on an advisory lock, so a burst of them cannot all
/// count the same rows and pass the bound together.
pub async fn issue(conn: &mut AsyncPgConnection, issued: &Issued, max_pending: Option<u32>) -> QueryResult<bool> {
    let Some(max_pending) = max_pending.filter(|_| !issued.client_ip.is_empty()) else {
        return insert(conn, issued, None).await;
    };
    conn.transaction(|conn| {
        async move {
            diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind::<Text, _>(format!("sign-in/{}", issued.client_ip))
                .execute(conn)
                .await?;
            insert(conn, issued, Some(max_pending)).await
        }
        .scope_boxed()
    })
    .await
}

/// The insert of [`issue`], conditional on the address's pending count.
async fn insert(conn: &mut AsyncPgConnection, issued: &Issued, max_pending: Option<u32>) -> QueryResult<bool> {
    let written = diesel::sql_query(
        "INSERT INTO sign_in_states (id, kind, client_ip, data, expires_at) \
         SELECT $1, $2, $3, $4, $5 \
         WHERE $6 IS NULL OR (SELECT count(*) FROM sign_in_states \
             WHERE client_ip = $3 AND consumed_at IS NULL AND expires_at > now()) < $6",
    )
    .bind::<Text, _>(&issued.id)
    .bind::<Text, _>(issued.kind)
    .bind::<Text, _>(&issued.client_ip)
    .bind::<Jsonb, _>(&issued.data)
    .bind::<Timestamptz, _>(issued.expires_at)
    .bind::<Nullable<BigInt>, _>(max_pending.map(i64::from))
    .execute(conn)
    .await?;
    Ok(written == 1)
}

/// Marks state `id` used and answers its data and expiry, in one statement,
/// if it is of `kind`, bound to `client_ip`, unexpired at `now` and unused:
/// of two processes using it at once, one gets it. A use from another
/// address takes nothing, so the state stays usable by its own.
pub async fn consume(
    conn: &mut AsyncPgConnection,
    id: &str,
    kind: &str,
    client_ip: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<(Json, DateTime<Utc>)>> {
    #[derive(QueryableByName)]
    struct Taken {
        #[diesel(sql_type = Jsonb)]
        data: Json,
        #[diesel(sql_type = Timestamptz)]
        expires_at: DateTime<Utc>,
    }
    let taken: Option<Taken> = diesel::sql_query(
        "UPDATE sign_in_states SET consumed_at = $5 \
         WHERE id = $1 AND kind = $2 AND client_ip = $3 AND consumed_at IS NULL AND expires_at > $4 \
         RETURNING data, expires_at",
    )
    .bind::<Text, _>(id)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(client_ip)
    .bind::<Timestamptz, _>(now)
    .bind::<Timestamptz, _>(Utc::now())
    .get_result(conn)
    .await
    .optional()?;
    Ok(taken.map(|taken| (taken.data, taken.expires_at)))
}

/// The data of state `id`, as [`consume`] would take it, without using it.
pub async fn peek(
    conn: &mut AsyncPgConnection,
    id: &str,
    kind: &str,
    client_ip: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Json>> {
    sign_in_states::table
        .filter(sign_in_states::id.eq(id))
        .filter(sign_in_states::kind.eq(kind))
        .filter(sign_in_states::client_ip.eq(client_ip))
        .filter(sign_in_states::consumed_at.is_null())
        .filter(sign_in_states::expires_at.gt(now))
        .select(sign_in_states::data)
        .first(conn)
        .await
        .optional()
}

pub async fn discard(conn: &mut AsyncPgConnection, id: &str) -> QueryResult<()> {
    diesel::delete(sign_in_states::table.filter(sign_in_states::id.eq(id)))
        .execute(conn)
        .await
        .map(drop)
}

/// Deletes the state that expired before `now`; answers how much.
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(sign_in_states::table.filter(sign_in_states::expires_at.le(now)))
        .execute(conn)
        .await
}

/// The person a login (`identity`, `<provider>:<uid>`) is in each database:
/// the live entities holding a live `service_user` value with that identity,
/// the earliest linked one where a database has several. By database name.
pub async fn persons_of_login(conn: &mut AsyncPgConnection, identity: &str) -> QueryResult<Vec<(String, String)>> {
    #[derive(QueryableByName)]
    struct Person {
        #[diesel(sql_type = Text)]
        db: String,
        #[diesel(sql_type = Text)]
        entity_id: String,
    }
    let persons: Vec<Person> = diesel::sql_query(
        "SELECT DISTINCT ON (v.db) v.db, v.entity_id FROM property_values v \
         JOIN entities e ON e.db = v.db AND e.id = v.entity_id AND e.deleted_at IS NULL \
         WHERE v.secret_lookup = $1 AND v.prop = $2 AND v.login_provider IS NOT NULL AND v.deleted_at IS NULL \
         ORDER BY v.db, v.created_at, v.id",
    )
    .bind::<Text, _>(identity)
    .bind::<Text, _>(LOGIN_PROPERTY)
    .load(conn)
    .await?;
    Ok(persons
        .into_iter()
        .map(|person| (person.db, person.entity_id))
        .collect())
}

/// The passkeys stored under credential id `credential_id` (base64url), by
/// login identity (`passkey:<credential id>.<key digest>`), as live login
/// methods on live persons keep them; normally one. The earliest stored of
/// each identity.
pub async fn stored_passkeys(
    conn: &mut AsyncPgConnection,
    credential_id: &str,
) -> QueryResult<Vec<(String, StoredPasskey)>> {
    #[derive(QueryableByName)]
    struct Stored {
        #[diesel(sql_type = Text)]
        identity: String,
        #[diesel(sql_type = Text)]
        device: String,
        #[diesel(sql_type = Text)]
        credential: String,
    }
    // base64url has `_`, a LIKE wildcard: escaped.
    let prefix = format!(
        "{PASSKEY_PROVIDER}:{}.%",
        credential_id.replace('\\', "\\\\").replace('_', "\\_")
    );
    // `login_provider = 'passkey'` is written out so the partial index serves it.
    let stored: Vec<Stored> = diesel::sql_query(
        "SELECT DISTINCT ON (v.secret_lookup) v.secret_lookup AS identity, v.string AS device, v.secret AS credential \
         FROM property_values v \
         JOIN entities e ON e.db = v.db AND e.id = v.entity_id AND e.deleted_at IS NULL \
         WHERE v.login_provider = 'passkey' AND v.deleted_at IS NULL AND v.secret_lookup LIKE $1 \
         AND v.prop = $2 AND v.string IS NOT NULL AND v.secret IS NOT NULL \
         ORDER BY v.secret_lookup, v.created_at, v.id LIMIT 10",
    )
    .bind::<Text, _>(prefix)
    .bind::<Text, _>(LOGIN_PROPERTY)
    .load(conn)
    .await?;
    Ok(stored
        .into_iter()
        .filter_map(|stored| {
            let credential = serde_json::from_str(&stored.credential).ok()?;
            Some((
                stored.identity,
                StoredPasskey {
                    device: stored.device,
                    credential,
                },
            ))
        })
        .collect())
}

/// Stores a passkey's credential after a sign-in moved its signature
/// counter, in every live login method holding it: a cloned authenticator
/// replaying an older counter is then refused. The credential is no value
/// anyone reads or filters by, so no projection changes.
pub async fn update_passkey(conn: &mut AsyncPgConnection, identity: &str, credential: &Json) -> QueryResult<usize> {
    diesel::sql_query(
        "UPDATE property_values SET secret = $4 \
         WHERE secret_lookup = $1 AND prop = $2 AND login_provider = $3 AND deleted_at IS NULL",
    )
    .bind::<Text, _>(identity)
    .bind::<Text, _>(LOGIN_PROPERTY)
    .bind::<Text, _>(PASSKEY_PROVIDER)
    .bind::<Text, _>(credential.to_string())
    .execute(conn)
    .await
}

/// Where a database creates the persons of new logins: under `parent`, of
/// type `person_type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddUserTarget {
    pub parent: String,
    pub person_type: String,
}

/// Where database `db` creates the persons of new logins, if anywhere: the
/// live target of the earliest live `add_user` value on the database's own
/// entity whose writer, a live person, is now an owner of that entity and
/// an expander of the target ([`places_new_persons`]); with its `person` type.
pub async fn add_user_target(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<Option<AddUserTarget>> {
    let Some(database_id) = databases::own_entity(conn, db).await? else {
        return Ok(None);
    };
    let Some(database) = values::live_entity(conn, db, &database_id, false).await? else {
        return Ok(None);
    };
    let database = database.lists();
    let Some(person_type) = person_type(conn, db, &database_id).await? else {
        return Ok(None);
    };
    let mut candidates: Vec<ValueRow> = values::live_values(conn, db, &database_id)
        .await?
        .into_iter()
        .filter(|value| value.prop == ADD_USER_PROPERTY)
        .collect();
    candidates.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    for candidate in candidates {
        let (Some(parent), Some(writer)) = (candidate.reference, candidate.created_by) else {
            continue;
        };
        let Some(target) = values::live_entity(conn, db, &parent, false).await? else {
            continue;
        };
        if places_new_persons(&writer, &database, &target.lists()) && values::entity_exists(conn, db, &writer).await? {
            return Ok(Some(AddUserTarget { parent, person_type }));
        }
    }
    Ok(None)
}

/// The live `person` type of database `db`: an entity type, as its
/// `database` entity's type is, named `person`.
async fn person_type(conn: &mut AsyncPgConnection, db: &str, database_id: &str) -> QueryResult<Option<String>> {
    #[derive(QueryableByName)]
    struct PersonType {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let found: Option<PersonType> = diesel::sql_query(
        "SELECT pt.id FROM entities d \
         JOIN entities dt ON dt.db = d.db AND dt.id = d.type_id \
         JOIN entities pt ON pt.db = d.db AND pt.type_id = dt.type_id AND pt.name = 'person' AND pt.deleted_at IS NULL \
         WHERE d.db = $1 AND d.id = $2 \
         ORDER BY pt.id LIMIT 1",
    )
    .bind::<Text, _>(db)
    .bind::<Text, _>(database_id)
    .get_result(conn)
    .await
    .optional()?;
    Ok(found.map(|found| found.id))
}
