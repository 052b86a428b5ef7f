//! The `Eds-Consistency` header of write answers: the commit position of the
//! request's write, signed. The [`Caller`](crate::service::Caller) extractor
//! leaves the slot its write fills in the request's extensions; an answer
//! whose request wrote nothing carries no header.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, web};

use crate::http::AppState;
use crate::service::consistency::HOME_CLUSTER;

/// The position a request's write committed at (0: none yet).
#[derive(Clone)]
pub struct WrittenPosition(pub Arc<AtomicU64>);

pub async fn answer_position(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    let mut response = next.call(req).await?;
    let written = response
        .request()
        .extensions()
        .get::<WrittenPosition>()
        .map_or(0, |slot| slot.0.load(Ordering::Relaxed));
    if written == 0 {
        return Ok(response);
    }
    let Some(state) = response.request().app_data::<web::Data<AppState>>().cloned() else {
        return Ok(response);
    };
    let value = state.replicas.signer.sign(HOME_CLUSTER, written);
    if let Ok(value) = HeaderValue::from_str(&value) {
        // HeaderName::from_static wants the lower-case spelling of consistency::HEADER
        response
            .headers_mut()
            .insert(HeaderName::from_static("eds-consistency"), value);
    }
    Ok(response)
}
