//! The bodies the operations answer (and the values a write takes), each
//! `Serialize + ToSchema`: REST answers them and the OpenAPI document
//! describes them from the same types.

pub mod batch;
pub mod duplicate_activity;
pub mod entities;
pub mod values;
pub mod writes;
