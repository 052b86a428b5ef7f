//! Maps in the configuration: a TOML table, or JSON text (as an
//! environment variable holds one).

use std::collections::BTreeMap;

use serde::Deserialize;

/// A map of strings given as a map, or as a JSON object in one string.
pub(super) fn map_or_json<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum MapOrText {
        Map(BTreeMap<String, String>),
        Text(String),
    }
    match MapOrText::deserialize(deserializer)? {
        MapOrText::Map(map) => Ok(map),
        MapOrText::Text(text) if text.trim().is_empty() => Ok(BTreeMap::new()),
        MapOrText::Text(text) => serde_json::from_str(&text).map_err(serde::de::Error::custom),
    }
}
