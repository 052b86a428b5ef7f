//! The passkey pages: registering a passkey and signing in with one. Both
//! run `passkey.js` (served from this server, the CSP allows nothing else),
//! which calls the JSON ceremony endpoints and `navigator.credentials`.
//! Without `next` a signed-in page shows the session token in `#key`.

use actix_web::HttpResponse;

use super::pages::{escape, page_with_script};
use crate::sign_in::Lang;

/// The script both pages run, relative to `/api/auth/passkey/`.
pub const SCRIPT: &str = include_str!("passkey.js");

struct Texts {
    register_title: &'static str,
    register_intro: &'static str,
    device_label: &'static str,
    register_button: &'static str,
    sign_in_title: &'static str,
    sign_in_intro: &'static str,
    sign_in_button: &'static str,
    to_sign_in: &'static str,
    to_register: &'static str,
    signed_in: &'static str,
    failed: &'static str,
}

fn texts(lang: Lang) -> &'static Texts {
    match lang {
        Lang::En => &Texts {
            register_title: "Create a passkey",
            register_intro: "Your device keeps the passkey and unlocks it with your fingerprint, face or screen lock. Name the device so you can tell your passkeys apart.",
            device_label: "Device name",
            register_button: "Create the passkey",
            sign_in_title: "Sign in with a passkey",
            sign_in_intro: "Your device offers the passkeys it holds for this site.",
            sign_in_button: "Sign in with a passkey",
            to_sign_in: "I have a passkey: sign in",
            to_register: "No passkey yet? Create one",
            signed_in: "Signed in. Your session token (single use, 5 minutes):",
            failed: "The passkey did not work:",
        },
        Lang::Et => &Texts {
            register_title: "Loo pääsuvõti",
            register_intro: "Pääsuvõti jääb sinu seadmesse ja avaneb sõrmejälje, näo või ekraaniluku abil. Anna seadmele nimi, et oma pääsuvõtmeid eristada.",
            device_label: "Seadme nimi",
            register_button: "Loo pääsuvõti",
            sign_in_title: "Logi sisse pääsuvõtmega",
            sign_in_intro: "Sinu seade pakub selle saidi jaoks salvestatud pääsuvõtmeid.",
            sign_in_button: "Logi sisse pääsuvõtmega",
            to_sign_in: "Mul on pääsuvõti: logi sisse",
            to_register: "Pääsuvõtit veel pole? Loo see",
            signed_in: "Sisse logitud. Sinu seansivõti (ühekordne, 5 minutit):",
            failed: "Pääsuvõti ei toiminud:",
        },
    }
}

/// What the pages carry along: `next`, `invite`, and (registration only,
/// for a signed-in person adding a passkey) `db`.
pub struct Carried<'a> {
    pub next: Option<&'a str>,
    pub invite: Option<&'a str>,
    pub db: Option<&'a str>,
}

impl Carried<'_> {
    /// The `data-*` attributes the script reads them from.
    fn attributes(&self) -> String {
        [("next", self.next), ("invite", self.invite), ("db", self.db)]
            .into_iter()
            .filter_map(|(name, value)| Some(format!(" data-{name}=\"{}\"", escape(value?))))
            .collect()
    }

    /// The query string of a link to the other page.
    fn query(&self, lang: Lang) -> String {
        let mut pairs = vec![("lang", lang.code())];
        pairs.extend(self.next.map(|next| ("next", next)));
        pairs.extend(self.invite.map(|invite| ("invite", invite)));
        escape(&serde_urlencoded::to_string(&pairs).unwrap_or_default())
    }
}

/// The status line and the signed-in result both pages share.
fn outcome(t: &Texts) -> String {
    format!(
        "<p id=\"status\" role=\"alert\" data-failed=\"{failed}\"></p>\
         <div id=\"done\" hidden><p>{signed_in}</p><output id=\"key\"></output></div>",
        failed = t.failed,
        signed_in = t.signed_in,
    )
}

/// `GET /api/auth/passkey/register`: a device name, then the browser makes the passkey.
pub fn register(lang: Lang, carried: &Carried) -> HttpResponse {
    let t = texts(lang);
    let main = format!(
        "<h1>{title}</h1><p>{intro}</p>\
         <form id=\"passkey-register\"{data}>\
         <label for=\"device\">{label}</label>\
         <input type=\"text\" id=\"device\" name=\"device\" maxlength=\"100\" autocomplete=\"off\" required>\
         <button type=\"submit\">{button}</button></form>{outcome}\
         <p><a href=\"../passkey?{query}\">{other}</a></p>",
        title = t.register_title,
        intro = t.register_intro,
        data = carried.attributes(),
        label = t.device_label,
        button = t.register_button,
        outcome = outcome(t),
        query = carried.query(lang),
        other = t.to_sign_in,
    );
    page_with_script(lang, t.register_title, &main, Some("passkey.js"))
}

/// `GET /api/auth/passkey`: one button; the device offers its passkeys.
pub fn sign_in(lang: Lang, carried: &Carried) -> HttpResponse {
    let t = texts(lang);
    let main = format!(
        "<h1>{title}</h1><p>{intro}</p>\
         <button type=\"button\" id=\"passkey-sign-in\"{data}>{button}</button>{outcome}\
         <p><a href=\"passkey/register?{query}\">{other}</a></p>",
        title = t.sign_in_title,
        intro = t.sign_in_intro,
        data = carried.attributes(),
        button = t.sign_in_button,
        outcome = outcome(t),
        query = carried.query(lang),
        other = t.to_register,
    );
    page_with_script(lang, t.sign_in_title, &main, Some("passkey/passkey.js"))
}
