//! The forms of the sign-in pages are posted from those pages only. Another
//! site could otherwise post the e-mail form with its own address, so that
//! the victim's browser, sent to the mailed link, signs in as the attacker
//! (login CSRF), or submit a consent or an invitation's confirmation.

use super::SignIn;
use crate::error::{ApiError, ErrorCode};

impl SignIn {
    /// 403 `cross_site_form` for a form post whose `Origin` is present and
    /// is not this service's own (of `http.public_url` or `http.api_url`;
    /// `null` is foreign), or whose `Sec-Fetch-Site` is `cross-site`. A post
    /// with neither header (a client that is no browser) passes.
    pub fn check_form_origin(&self, origin: Option<&str>, fetch_site: Option<&str>) -> Result<(), ApiError> {
        if posted_from(origin, fetch_site, &[&self.public_url, &self.api_url]) {
            return Ok(());
        }
        Err(ApiError::new(
            ErrorCode::CrossSiteForm,
            "This form can only be sent from this service's own pages",
        ))
    }
}

/// Whether a post with these `Origin` and `Sec-Fetch-Site` headers may come
/// from the pages served at `own` URLs.
fn posted_from(origin: Option<&str>, fetch_site: Option<&str>, own: &[&str]) -> bool {
    let foreign_origin = origin.is_some_and(|origin| match origin_of(origin) {
        None => true,
        Some(origin) => !own.iter().any(|own| origin_of(own).as_ref() == Some(&origin)),
    });
    !foreign_origin && !fetch_site.is_some_and(|site| site.eq_ignore_ascii_case("cross-site"))
}

/// The origin (`scheme://host[:port]`) of `url` as browsers write it, or
/// `None` for an opaque one (`null`, `data:`...).
fn origin_of(url: &str) -> Option<String> {
    let origin = url::Url::parse(url).ok()?.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_compared_as_browsers_write_them() {
        assert_eq!(
            origin_of("https://Example.COM:443/path").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(
            origin_of("http://127.0.0.1:8080").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(origin_of("null"), None);
        assert_eq!(origin_of("data:text/html,x"), None);
    }

    #[test]
    fn a_form_is_taken_from_the_services_own_origins_or_from_no_browser() {
        let own = ["https://eds.example.com", "https://api.example.com/"];
        assert!(posted_from(Some("https://eds.example.com"), Some("same-origin"), &own));
        assert!(posted_from(Some("https://api.example.com"), Some("same-site"), &own));
        assert!(posted_from(None, None, &own));
        assert!(posted_from(None, Some("none"), &own));
        assert!(!posted_from(Some("https://evil.example"), None, &own));
        assert!(!posted_from(Some("null"), None, &own));
        assert!(!posted_from(None, Some("cross-site"), &own));
        assert!(!posted_from(Some("https://eds.example.com"), Some("cross-site"), &own));
        assert!(!posted_from(Some("http://eds.example.com"), None, &own));
    }
}
