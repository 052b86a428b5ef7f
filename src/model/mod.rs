//! The data model: ids, values and property definitions. Pure code, no I/O.

pub mod counter;
pub mod definition;
pub mod ids;
pub mod json;
pub mod projection;
pub mod stored;
pub mod value;

/// Property holding hashed API keys; shown as `***` everywhere but in its creation response.
pub const API_KEY_PROPERTY: &str = "service_api_key";
/// Property holding login methods; its login fields are set only by the service.
pub const LOGIN_PROPERTY: &str = "service_user";
/// Property referencing an entity's one type.
pub const TYPE_PROPERTY: &str = "_type";
/// Name of the type whose entities are entity types.
pub const ENTITY_TYPE: &str = "entity";
/// Name of the type whose entities are property definitions.
pub const PROPERTY_TYPE: &str = "property";
