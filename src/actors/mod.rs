//! Actors: one writer per database, the formula worker, the thumbnail pool.

pub mod db_writer;
pub mod formula_worker;
pub mod thumbnailer;
