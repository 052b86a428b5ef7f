//! eds, the Entity Data Service: a multi-database store of entities with
//! typed, multi-valued properties, served over HTTP.

pub mod actors;
pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod db;
pub mod error;
pub mod formula;
pub mod graphql;
pub mod http;
pub mod jobs;
pub mod mail;
pub mod mcp;
pub mod metrics;
pub mod model;
pub mod net;
pub mod query;
pub mod rights;
pub mod service;
pub mod sign_in;
pub mod storage;
pub mod usage;
pub mod view;
pub mod webhooks;
pub mod write;
