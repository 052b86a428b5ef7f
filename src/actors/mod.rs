//! Actors: one writer per database, the thumbnail pool.

pub mod db_writer;
pub mod thumbnailer;
