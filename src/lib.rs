//! eds, the Entity Data Service: a multi-database store of entities with
//! typed, multi-valued properties, served over HTTP.

pub mod actors;
pub mod admin;
pub mod app;
pub mod auth;
pub mod config;
pub mod db;
pub mod error;
pub mod export;
pub mod formula;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod query;
pub mod rights;
pub mod storage;
pub mod thumbnail;
pub mod usage;
pub mod view;
pub mod write;
