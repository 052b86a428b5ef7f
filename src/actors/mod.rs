//! Actors: one writer per database; the sign-in state.

pub mod db_writer;
pub mod home;
pub mod sessions;
