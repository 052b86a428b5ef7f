//! Rebuilds the crate when a migration is added or changed: the migrations
//! are embedded at compile time, and cargo does not watch their folder
//! otherwise.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
