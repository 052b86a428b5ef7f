//! `POST /api/{db}/batch` as REST and MCP answer it: creates, additions
//! and deletes in one transaction through the database's writer, all or
//! nothing, each under the rules of its single route.

use std::collections::HashSet;

use serde_json::Value as Json;

use crate::error::ApiError;
use crate::model::value::ValueInput;
use crate::service::batch_body::{self, BatchLimits};
use crate::service::bodies::batch::Batched;
use crate::service::bodies::writes::{Deleted, Written};
use crate::service::rate_limits::Charged;
use crate::service::{Caller, IdempotencyKey, Service, entities, invitations, uploads, webhooks};
use crate::write::{Batch, BatchOp, EntityId, WriteOp, WriteOutcome};

/// Applies the batch `body` asks for (`{"operations":[...],"dry_run"?}`).
/// A read-only token is refused first, then the body's shape and limits,
/// before any other work. With `retry`, a repeat answers the first batch's
/// answer; a dry run records nothing, mails nothing and signs no upload.
pub async fn batch(
    service: &Service,
    caller: &Caller,
    db: &str,
    body: &Json,
    retry: Option<IdempotencyKey>,
) -> Result<Batched, ApiError> {
    caller.require_write()?;
    let limits = BatchLimits {
        operations: service.max_batch_operations,
        values_per_write: service.max_values_per_write,
    };
    let batch = batch_body::parse(body, &limits)?;
    for (index, operation) in batch.operations.iter().enumerate() {
        entities::refuse_oauth_credentials(caller, operation.values()).map_err(|error| error.in_operation(index))?;
        // the webhook rules, on new entities, on those named by id, and on
        // those named `$name` as the create that makes them left them
        let checked = match operation {
            BatchOp::Create { .. } => webhooks::check_write(service, caller, db, None, operation.values()).await,
            BatchOp::Add {
                entity: EntityId::Id(id),
                values,
                ..
            } => webhooks::check_write(service, caller, db, Some(id), values).await,
            BatchOp::Add {
                entity: EntityId::Ref(name),
                values,
                ..
            } => {
                let created = created_as(&batch.operations[..index], name);
                webhooks::check_write_to_created(service, caller, db, created, values).await
            }
            _ => Ok(()),
        };
        checked.map_err(|error| error.in_operation(index))?;
    }
    let dry_run = batch.dry_run;
    let retry = retry.filter(|_| !dry_run);
    let charged = if dry_run {
        Vec::new()
    } else {
        charge_invitations(service, caller, db, &batch, retry.as_ref()).await?
    };
    let outcome = match service.write_as(caller, db, WriteOp::Batch(batch), retry).await {
        Ok(outcome) => outcome,
        Err(error) => {
            for charged in charged.into_iter().flatten() {
                service.limits.refund(charged);
            }
            return Err(error);
        }
    };
    let repeat = matches!(outcome, WriteOutcome::Replayed(_));
    let WriteOutcome::Batched { results, refs, .. } = outcome.first() else {
        return Err(ApiError::internal("write", "a batch answered another outcome"));
    };
    let mut answers = Vec::with_capacity(results.len());
    let mut charged = charged.into_iter();
    for result in results {
        if let Some(charged) = charged.next().flatten() {
            invitations::mail(service, caller, db, &result, Some(charged)).await?;
        }
        answers.push(answer(service, caller, db, result, repeat, dry_run).await?);
    }
    Ok(Batched {
        results: answers,
        refs,
        dry_run,
    })
}

/// The invitation mail each operation would send, charged before the write
/// as a single write's is (`None` for one that sends none): over a limit →
/// 429 with that operation, and nothing charged stays charged.
async fn charge_invitations(
    service: &Service,
    caller: &Caller,
    db: &str,
    batch: &Batch,
    retry: Option<&IdempotencyKey>,
) -> Result<Vec<Option<Charged>>, ApiError> {
    let mut charges = Vec::with_capacity(batch.operations.len());
    for (index, operation) in batch.operations.iter().enumerate() {
        let charge = match operation {
            BatchOp::Add {
                entity: EntityId::Id(entity_id),
                values,
                ..
            } => invitations::charge(service, caller, db, entity_id, values, retry).await,
            BatchOp::Add {
                entity: EntityId::Ref(name),
                values,
                ..
            } => {
                let created = created_as(&batch.operations[..index], name);
                invitations::charge_new(service, caller, db, created, values)
            }
            _ => Ok(None),
        };
        match charge {
            Ok(charge) => charges.push(charge),
            Err(error) => {
                for charged in charges.into_iter().flatten() {
                    service.limits.refund(charged);
                }
                return Err(error.in_operation(index));
            }
        }
    }
    Ok(charges)
}

/// The values of the create among `earlier` that defines `$name` (none
/// when none does: the writer refuses that operation).
fn created_as<'a>(earlier: &'a [BatchOp], name: &str) -> &'a [ValueInput] {
    let created = earlier.iter().find_map(|operation| match operation {
        BatchOp::Create {
            name: Some(defined),
            values,
            ..
        } if defined == name => Some(values.as_slice()),
        _ => None,
    });
    created.unwrap_or_default()
}

/// One operation's result as its single route answers it: written values
/// with a signed `upload` for each file value (none on a dry run; on a
/// repeat only while it is still open to the caller), or `{"deleted":true}`.
async fn answer(
    service: &Service,
    caller: &Caller,
    db: &str,
    result: WriteOutcome,
    repeat: bool,
    dry_run: bool,
) -> Result<Json, ApiError> {
    let body = match result {
        WriteOutcome::Written { entity_id, values } => {
            let to_sign = if dry_run {
                HashSet::new()
            } else {
                uploads::signed_values(service, caller, db, &entity_id, &values, repeat).await?
            };
            let written = Written::signed(&service.files, db, entity_id, &values, &to_sign).await?;
            serde_json::to_value(written)
        }
        WriteOutcome::Deleted => serde_json::to_value(Deleted { deleted: true }),
        _ => {
            return Err(ApiError::internal(
                "write",
                "a batch operation answered another outcome",
            ));
        }
    };
    body.map_err(|error| ApiError::internal("batch answer", error))
}
