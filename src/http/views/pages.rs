//! The sign-in pages: server-rendered HTML in English and Estonian, every
//! given text escaped, a strict CSP (the one style sheet allowed by its
//! hash; a script only where WebAuthn needs one, from this server) and no
//! framing.

use std::sync::OnceLock;

use actix_web::HttpResponse;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::sign_in::Lang;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}\
h1{font-size:1.5rem}label{display:block;font-weight:600;margin-bottom:.25rem}\
input[type=email],input[type=text]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem;border:1px solid #767676;border-radius:4px}\
button{margin-top:1rem;padding:.5rem 1rem;font-size:1rem;border:0;border-radius:4px;background:#1d4ed8;color:#fff;cursor:pointer}\
button:focus,input:focus,a:focus{outline:3px solid #f59e0b;outline-offset:2px}p.note{color:#4a4a4a}\
ul.methods{list-style:none;padding:0}ul.methods a{display:block;margin:.5rem 0;padding:.75rem 1rem;border:1px solid #767676;border-radius:4px;color:#1d4ed8;text-decoration:none;font-weight:600}\
output{display:block;max-height:6rem;overflow:auto;word-break:break-all;font-family:monospace;font-size:.75rem;padding:.5rem;background:#f3f4f6}p[role=alert]{color:#b91c1c}";

/// The texts of the pages, by language.
struct Texts {
    email_title: &'static str,
    email_intro: &'static str,
    email_label: &'static str,
    email_button: &'static str,
    sent_title: &'static str,
    sent_body: &'static str,
    choose_title: &'static str,
    choose_intro: &'static str,
    /// Each provider's name on the chooser, by provider.
    providers: [(&'static str, &'static str); 7],
}

fn texts(lang: Lang) -> &'static Texts {
    match lang {
        Lang::En => &Texts {
            email_title: "Sign in with e-mail",
            email_intro: "We will mail you a link. Open it on this device within 15 minutes to sign in.",
            email_label: "E-mail address",
            email_button: "Send the link",
            sent_title: "Check your mail",
            sent_body: "If the address is right, a sign-in link is on its way. It works once, for 15 minutes, on this device.",
            choose_title: "Sign in",
            choose_intro: "Choose how to sign in.",
            providers: [
                ("passkey", "Passkey"),
                ("smart-id", "Smart-ID"),
                ("mobile-id", "Mobile-ID"),
                ("id-card", "ID card"),
                ("google", "Google"),
                ("apple", "Apple"),
                ("e-mail", "E-mail"),
            ],
        },
        Lang::Et => &Texts {
            email_title: "Logi sisse e-postiga",
            email_intro: "Saadame sulle lingi. Ava see 15 minuti jooksul selles seadmes, et sisse logida.",
            email_label: "E-posti aadress",
            email_button: "Saada link",
            sent_title: "Vaata oma postkasti",
            sent_body: "Kui aadress on õige, on sisselogimise link teel. See töötab üks kord, 15 minuti jooksul, selles seadmes.",
            choose_title: "Logi sisse",
            choose_intro: "Vali, kuidas sisse logida.",
            providers: [
                ("passkey", "Pääsuvõti"),
                ("smart-id", "Smart-ID"),
                ("mobile-id", "Mobiil-ID"),
                ("id-card", "ID-kaart"),
                ("google", "Google"),
                ("apple", "Apple"),
                ("e-mail", "E-post"),
            ],
        },
    }
}

/// `text` safe inside HTML text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The policy: nothing but the style sheet, forms posting back here, no
/// frames; with `scripted`, also scripts from this server that may call it.
fn content_security_policy(scripted: bool) -> &'static str {
    static POLICIES: OnceLock<[String; 2]> = OnceLock::new();
    let [plain, with_script] = POLICIES.get_or_init(|| {
        let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(STYLE.as_bytes()));
        let plain = format!(
            "default-src 'none'; style-src 'sha256-{hash}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        );
        let with_script = format!("{plain}; script-src 'self'; connect-src 'self'");
        [plain, with_script]
    });
    if scripted { with_script } else { plain }
}

fn page(lang: Lang, title: &str, main: &str) -> HttpResponse {
    page_with_script(lang, title, main, None)
}

/// A page; `script` is the (relative) URL of a script of this server's.
pub fn page_with_script(lang: Lang, title: &str, main: &str, script: Option<&str>) -> HttpResponse {
    framed(lang, title, main, script, content_security_policy(script.is_some()))
}

/// A page whose form's answer redirects to `form_target` (a CSP source
/// expression: an origin or a scheme), which browsers check against
/// `form-action` too.
pub(super) fn page_with_form_target(lang: Lang, title: &str, main: &str, form_target: &str) -> HttpResponse {
    let policy =
        content_security_policy(false).replacen("form-action 'self'", &format!("form-action 'self' {form_target}"), 1);
    framed(lang, title, main, None, &policy)
}

fn framed(lang: Lang, title: &str, main: &str, script: Option<&str>, policy: &str) -> HttpResponse {
    let script = script
        .map(|src| format!("<script src=\"{}\"></script>", escape(src)))
        .unwrap_or_default();
    let html = format!(
        "<!doctype html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head>\
         <body><main>{main}</main>{script}</body></html>\n",
        lang = lang.code(),
        title = escape(title),
    );
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header(("Content-Security-Policy", policy))
        .insert_header(("X-Frame-Options", "DENY"))
        // not `no-referrer`: under it browsers post the forms with `Origin:
        // null`, which the cross-site check must refuse
        .insert_header(("Referrer-Policy", "same-origin"))
        .insert_header(("Cache-Control", "no-store"))
        .body(html)
}

/// The e-mail provider's form: one `email` input; `next`, `lang` and
/// `invite` ride along hidden.
pub fn email_form(lang: Lang, next: Option<&str>, invite: Option<&str>) -> HttpResponse {
    let t = texts(lang);
    let mut hidden = format!("<input type=\"hidden\" name=\"lang\" value=\"{}\">", lang.code());
    for (name, value) in [("next", next), ("invite", invite)] {
        if let Some(value) = value {
            hidden.push_str(&format!(
                "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
                escape(value)
            ));
        }
    }
    let main = format!(
        "<h1>{title}</h1><p>{intro}</p>\
         <form method=\"post\" action=\"e-mail\">{hidden}\
         <label for=\"email\">{label}</label>\
         <input type=\"email\" id=\"email\" name=\"email\" required autocomplete=\"email\" autofocus>\
         <button type=\"submit\">{button}</button></form>",
        title = t.email_title,
        intro = t.email_intro,
        label = t.email_label,
        button = t.email_button,
    );
    page(lang, t.email_title, &main)
}

/// The method chooser: a link to each of `offered` (providers, in the
/// page's order), carrying `next`, `lang` and `invite` along.
pub fn chooser(lang: Lang, offered: &[&str], next: Option<&str>, invite: Option<&str>) -> HttpResponse {
    let t = texts(lang);
    let mut carried = vec![("lang", lang.code())];
    carried.extend(next.map(|next| ("next", next)));
    carried.extend(invite.map(|invite| ("invite", invite)));
    let query = serde_urlencoded::to_string(&carried).unwrap_or_default();
    let links: String = t
        .providers
        .iter()
        .filter(|(provider, _)| offered.contains(provider))
        .map(|(provider, label)| format!("<li><a href=\"{provider}?{}\">{label}</a></li>", escape(&query)))
        .collect();
    let main = format!(
        "<h1>{}</h1><p>{}</p><nav aria-label=\"{}\"><ul class=\"methods\">{links}</ul></nav>",
        t.choose_title, t.choose_intro, t.choose_title
    );
    page(lang, t.choose_title, &main)
}

/// A 400 page for a person the browser brought with a request that cannot
/// go on and cannot be sent back (an unknown OAuth client or redirect URI).
pub fn refused(lang: Lang, message: &str) -> HttpResponse {
    let title = match lang {
        Lang::En => "Sign-in cannot continue",
        Lang::Et => "Sisselogimist ei saa jätkata",
    };
    let main = format!("<h1>{title}</h1><p role=\"alert\">{}</p>", escape(message));
    let mut response = page(lang, title, &main);
    *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
    response
}

/// The confirmation of the invitation to `db` a sign-in carries: one form,
/// posted back here with the held sign-in's `confirmation`.
pub fn invitation_confirmation(lang: Lang, db: &str, confirmation: &str) -> HttpResponse {
    let (title, body, button) = match lang {
        Lang::En => ("Accept the invitation", "You are accepting an invitation to", "Accept"),
        Lang::Et => ("Kutse vastuvõtmine", "Võtad vastu kutse andmebaasi", "Võta vastu"),
    };
    let main = format!(
        "<h1>{title}</h1><p>{body} <strong>{db}</strong></p>\
         <form method=\"post\" action=\"invitation\">\
         <input type=\"hidden\" name=\"confirmation\" value=\"{confirmation}\">\
         <input type=\"hidden\" name=\"lang\" value=\"{lang}\">\
         <button type=\"submit\">{button}</button></form>",
        db = escape(db),
        confirmation = escape(confirmation),
        lang = lang.code(),
    );
    page(lang, title, &main)
}

/// What the form answers once the link is mailed.
pub fn email_sent(lang: Lang) -> HttpResponse {
    let t = texts(lang);
    let main = format!(
        "<h1>{}</h1><p class=\"note\" role=\"status\">{}</p>",
        t.sent_title, t.sent_body
    );
    page(lang, t.sent_title, &main)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup_or_attribute_breakout() {
        assert_eq!(
            escape(r#"https://x/"><script>alert('1')</script>&"#),
            "https://x/&quot;&gt;&lt;script&gt;alert(&#39;1&#39;)&lt;/script&gt;&amp;"
        );
    }
}
