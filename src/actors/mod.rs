//! Actors: one writer per database.

pub mod db_writer;
