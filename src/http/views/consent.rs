//! The OAuth consent page: which app (in its own words), where it sends the
//! person, which database and what access (in words, and the scopes by
//! name); one form that allows, one link that denies.

use actix_web::HttpResponse;

use super::pages::{escape, page_with_form_target};
use crate::auth::scope::allows_write;
use crate::sign_in::Lang;

/// What the consent page shows and where its answers go.
pub struct ConsentPage<'a> {
    pub lang: Lang,
    pub client_name: Option<&'a str>,
    /// The host of a metadata-document client's `client_id` URL.
    pub client_host: Option<&'a str>,
    pub redirect_uri: &'a str,
    pub db: &'a str,
    /// The scopes asked, space-separated.
    pub scope: &'a str,
    /// The absolute URL the form posts to (this service's own).
    pub allow_url: &'a str,
    /// The absolute URL of the deny link.
    pub deny_url: &'a str,
    /// The single-use consent token the form carries.
    pub token: &'a str,
}

/// What a grant lets the app do, in words: its name and what it means.
struct Access {
    name: &'static str,
    means: &'static str,
    warning: &'static str,
}

struct Texts {
    title: &'static str,
    intro: &'static str,
    app: &'static str,
    own_words: &'static str,
    no_name: &'static str,
    described_at: &'static str,
    sends_to: &'static str,
    database: &'static str,
    access: &'static str,
    scopes: &'static str,
    read_only: Access,
    read_and_write: Access,
    allow: &'static str,
    deny: &'static str,
}

fn texts(lang: Lang) -> &'static Texts {
    match lang {
        Lang::En => &Texts {
            title: "Allow access?",
            intro: "An app asks to use a database in your name.",
            app: "App",
            own_words: "the app's own words, not checked by this service",
            no_name: "(the app gave no name)",
            described_at: "Described by",
            sends_to: "Sends you to",
            database: "Database",
            access: "Access",
            scopes: "scopes",
            read_only: Access {
                name: "read-only access",
                means: "it may read what you can read",
                warning: "Allow only if you started this from an app you trust: for 12 hours it can read everything you can in this database.",
            },
            read_and_write: Access {
                name: "read and write access",
                means: "it may read and change what you can change",
                warning: "Allow only if you started this from an app you trust: for 12 hours it can read and change everything you can in this database.",
            },
            allow: "Allow",
            deny: "Deny",
        },
        Lang::Et => &Texts {
            title: "Kas lubada juurdepääs?",
            intro: "Rakendus soovib kasutada andmebaasi sinu nimel.",
            app: "Rakendus",
            own_words: "rakenduse enda sõnad, see teenus neid ei kontrolli",
            no_name: "(rakendus ei andnud nime)",
            described_at: "Kirjeldus asub",
            sends_to: "Suunab sind aadressile",
            database: "Andmebaas",
            access: "Juurdepääs",
            scopes: "õigused",
            read_only: Access {
                name: "lugemisõigus",
                means: "see võib lugeda, mida sina saad lugeda",
                warning: "Luba ainult siis, kui alustasid seda rakendusest, mida usaldad: 12 tunni jooksul saab see lugeda kõike, mida sina selles andmebaasis saad.",
            },
            read_and_write: Access {
                name: "lugemis- ja kirjutusõigus",
                means: "see võib lugeda ja muuta, mida sina saad muuta",
                warning: "Luba ainult siis, kui alustasid seda rakendusest, mida usaldad: 12 tunni jooksul saab see lugeda ja muuta kõike, mida sina selles andmebaasis saad.",
            },
            allow: "Luba",
            deny: "Keela",
        },
    }
}

/// Where the redirect URI leads, as a person recognises it: its host, or
/// its scheme for an app's own URI (`myapp:`).
pub fn redirect_host(redirect_uri: &str) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(url) => match url.host_str() {
            Some(host) => host.to_owned(),
            None => format!("{}:", url.scheme()),
        },
        Err(_) => redirect_uri.to_owned(),
    }
}

/// The CSP source the form's answer redirects to: the origin of an http(s)
/// redirect URI, else its scheme.
fn form_target(redirect_uri: &str) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.origin().ascii_serialization(),
        Ok(url) => format!("{}:", url.scheme()),
        Err(_) => String::new(),
    }
}

pub fn consent_page(page: &ConsentPage<'_>) -> HttpResponse {
    let t = texts(page.lang);
    let client_name = match page.client_name {
        Some(name) => format!(
            "<q class=\"client-words\">{}</q> <small>({})</small>",
            escape(name),
            t.own_words
        ),
        None => t.no_name.to_owned(),
    };
    // the host that published the app's description: the one thing about it this service checked
    let described_at = match page.client_host {
        Some(host) => format!("<dt>{}</dt><dd><strong>{}</strong></dd>", t.described_at, escape(host)),
        None => String::new(),
    };
    let access = if allows_write(page.scope) {
        &t.read_and_write
    } else {
        &t.read_only
    };
    let scopes: Vec<String> = page
        .scope
        .split_whitespace()
        .map(|scope| format!("<code>{}</code>", escape(scope)))
        .collect();
    let main = format!(
        "<h1>{title}</h1><p>{intro}</p>\
         <dl><dt>{app}</dt><dd>{client_name}</dd>{described_at}\
         <dt>{sends_to}</dt><dd><strong>{host}</strong></dd>\
         <dt>{database}</dt><dd><strong>{db}</strong></dd>\
         <dt>{access}</dt><dd><strong>{access_name}</strong>: {access_means} \
         <small>({scopes_word}: {scopes})</small></dd></dl>\
         <p class=\"note\">{warning}</p>\
         <form method=\"post\" action=\"{allow_url}\">\
         <input type=\"hidden\" name=\"consent\" value=\"{token}\">\
         <input type=\"hidden\" name=\"lang\" value=\"{lang}\">\
         <button type=\"submit\">{allow}</button></form>\
         <p><a href=\"{deny_url}\">{deny}</a></p>",
        title = t.title,
        intro = t.intro,
        app = t.app,
        sends_to = t.sends_to,
        host = escape(&redirect_host(page.redirect_uri)),
        database = t.database,
        db = escape(page.db),
        access = t.access,
        access_name = access.name,
        access_means = access.means,
        scopes_word = t.scopes,
        scopes = scopes.join(" "),
        warning = access.warning,
        allow_url = escape(page.allow_url),
        token = escape(page.token),
        lang = page.lang.code(),
        allow = t.allow,
        deny_url = escape(page.deny_url),
        deny = t.deny,
    );
    page_with_form_target(page.lang, t.title, &main, &form_target(page.redirect_uri))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_target_is_an_origin_or_a_scheme_never_more() {
        assert_eq!(
            form_target("https://app.example:8443/cb?x=1"),
            "https://app.example:8443"
        );
        assert_eq!(form_target("http://127.0.0.1:33418/callback"), "http://127.0.0.1:33418");
        assert_eq!(form_target("myapp:callback"), "myapp:");
        assert_eq!(form_target("com.example.app:/oauth"), "com.example.app:");
        assert_eq!(redirect_host("https://app.example/cb"), "app.example");
        assert_eq!(redirect_host("myapp:callback"), "myapp:");
    }
}
