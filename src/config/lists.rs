//! Lists in the configuration: written in TOML, or in one environment
//! variable as JSON or comma-separated.

use serde::Deserialize;

/// A list given as a list, or as one string: a JSON list, or comma-separated.
pub(super) fn list_or_comma_separated<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrText::deserialize(deserializer)? {
        ListOrText::List(items) => items,
        ListOrText::Text(text) => match serde_json::from_str::<Vec<String>>(&text) {
            // an environment variable may hold the list as JSON
            Ok(items) => items,
            Err(_) => text
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(str::to_owned)
                .collect(),
        },
    })
}
