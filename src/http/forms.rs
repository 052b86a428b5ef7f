//! The forms of the sign-in, consent and confirmation pages are taken only
//! when posted from those pages: a handler that takes one extracts
//! [`FormOrigin`] and requires the post to come from this service's own
//! pages, else 403 `cross_site_form`.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};

use super::AppState;
use crate::error::ApiError;

/// Where a form post came from, as its `Origin` and `Sec-Fetch-Site` tell.
pub struct FormOrigin(Result<(), ApiError>);

impl FormOrigin {
    /// 403 `cross_site_form` unless the post came from this service's own
    /// pages (or from no browser). Not every form post is one of the
    /// pages': an OpenID Connect provider's `form_post` comes from its site.
    pub fn require_own_pages(self) -> Result<(), ApiError> {
        self.0
    }
}

impl FromRequest for FormOrigin {
    type Error = ApiError;
    type Future = Ready<Result<FormOrigin, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let header = |name: &str| req.headers().get(name).and_then(|value| value.to_str().ok());
        let checked = match req.app_data::<web::Data<AppState>>() {
            Some(state) => state
                .sign_in
                .check_form_origin(header("Origin"), header("Sec-Fetch-Site")),
            None => Err(ApiError::internal("no application state", "FormOrigin")),
        };
        ready(Ok(FormOrigin(checked)))
    }
}
