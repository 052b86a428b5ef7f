//! The `eds` command: serve, migrate, and administer databases and keys.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use eds::app::{self, ClusterGuard};
use eds::cli::{admin, export, import, move_db};
use eds::config::{LogFormat, Settings};
use eds::db::placement::Clusters;
use eds::db::{self, placement};
use eds::model::API_KEY_PROPERTY;
use eds::model::value::{Value, ValueInput};
use eds::write::{self, WriteOp, WriteOutcome, WriteRequest};
use serde_json::json;

/// Answers build and drop many small JSON trees and strings: mimalloc's
/// per-thread free lists serve them with less work than glibc's malloc,
/// whose bookkeeping was a fifth of the server's CPU on list requests.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "eds", version, about = "Entity Data Service")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP server (migrates first unless database.migrate_on_start = false).
    Serve,
    /// Apply pending migrations and exit.
    Migrate,
    /// Manage databases.
    #[command(subcommand)]
    Db(DbCommand),
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Write a database as JSON lines (format: docs/guide/src/operating/export-format.md), to stdout or FILE.
    Export {
        #[arg(value_name = "NAME")]
        database: String,
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Read an export into database NAME, which must be new or hold no entities.
    Import {
        #[arg(value_name = "NAME")]
        database: String,
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// The server's PDF worker: a PDF on stdin, its thumbnail JPEG on stdout.
    #[command(hide = true)]
    RenderPdf {
        #[arg(long, value_name = "PATH")]
        library: PathBuf,
        #[arg(long)]
        size: u32,
    },
}

#[derive(Subcommand)]
enum DbCommand {
    /// Create a database with its system types and an owner person holding an API key.
    Create {
        #[arg(value_name = "NAME")]
        database: String,
        /// The owner's e-mail address.
        #[arg(long)]
        email: String,
        /// The owner's name (default: the e-mail address).
        #[arg(long = "name", value_name = "N")]
        person_name: Option<String>,
        /// The PostgreSQL URL of the cluster to place it on (default: where
        /// `database.placement` places it, else the home cluster).
        #[arg(long, value_name = "URL")]
        cluster: Option<String>,
    },
    /// One JSON line per database: its name, live entity count and cluster.
    List,
    /// Move a database to another PostgreSQL cluster, online: its writes
    /// pause for the copy only; every server follows within 5 s.
    Move {
        #[arg(value_name = "NAME")]
        database: String,
        /// The target cluster's PostgreSQL URL.
        #[arg(value_name = "URL")]
        url: String,
    },
    /// Delete a database and everything in it, for good (its files stay in object
    /// storage). Stop or restart the servers using it afterwards.
    Delete {
        #[arg(value_name = "NAME")]
        database: String,
    },
    /// The usage object of `GET /api/{db}`.
    Usage {
        #[arg(value_name = "NAME")]
        database: String,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Add an API key to a person; prints it once.
    Create {
        #[arg(value_name = "DB")]
        database: String,
        #[arg(value_name = "PERSON_ID")]
        person: String,
    },
    /// Soft-delete a service_api_key value: that key no longer logs in.
    Revoke {
        #[arg(value_name = "DB")]
        database: String,
        #[arg(value_name = "VALUE_ID")]
        value_id: String,
    },
}

fn main() {
    let cli = Cli::parse();
    // Before the configuration: the worker reads nothing else and opens no database.
    if let Command::RenderPdf { library, size } = &cli.command {
        std::process::exit(eds::storage::thumbnail::render_pdf_worker(library, *size));
    }
    if let Err(message) = run(cli) {
        eprintln!("eds: {message}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let settings = Settings::load().map_err(|e| format!("configuration: {e}"))?;
    init_logging(&settings);
    let (url, _cluster): (String, Option<ClusterGuard>) = app::database_url(&settings)?;
    let runtime = actix_web::rt::System::new();
    if let Command::Serve = cli.command {
        return runtime.block_on(app::serve(settings, url));
    }
    // the other commands are one connection's work: not through a pooler
    let url = db::pooler::direct_url(&settings.database.direct_url, &url);
    match cli.command {
        Command::RenderPdf { .. } | Command::Serve => Ok(()),
        Command::Migrate => runtime.block_on(async {
            let applied = db::migrate(&url)?;
            let pool = db::pool(&url, 1, settings.database.statement_timeout_ms)?;
            db::add_missing_types(&pool).await.map_err(|e| e.message.into_owned())?;
            // and every cluster a database is placed on
            placement::prepare(&settings.database.placement, &pool, true).await?;
            println!("{}", json!({ "applied": applied }));
            Ok(())
        }),
        Command::Db(DbCommand::Create {
            database,
            email,
            person_name,
            cluster,
        }) => runtime.block_on(async {
            let clusters = admin_clusters(&url, &settings).await?;
            let pool = move_db::creation_pool(&clusters, &database, cluster.as_deref()).await?;
            let name = person_name.unwrap_or_else(|| email.clone());
            let created = db::databases::create(&pool, &database, &email, &name)
                .await
                .map_err(|e| e.message.into_owned())?;
            println!(
                "{}",
                json!({"database": database, "person": created.person_id, "api_key": created.api_key})
            );
            Ok(())
        }),
        Command::Key(KeyCommand::Create { database, person }) => runtime.block_on(async {
            let pool = move_db::pool_of(&*admin_clusters(&url, &settings).await?, &database)?;
            let request = WriteRequest {
                db: database,
                actor: person.clone(),
                op: WriteOp::AddValues {
                    entity_id: person,
                    values: vec![ValueInput::new(API_KEY_PROPERTY, Value::String("generate".to_owned()))],
                },
                idempotency: None,
            };
            let outcome = write::apply(&pool, request).await.map_err(|e| e.message.into_owned())?;
            let WriteOutcome::Written { values, .. } = outcome else {
                return Err("no key was written".to_owned());
            };
            println!("{}", json!({ "api_key": values[0].plain_key }));
            Ok(())
        }),
        Command::Db(DbCommand::List) => runtime.block_on(async {
            for line in move_db::list(&*admin_clusters(&url, &settings).await?).await? {
                println!("{line}");
            }
            Ok(())
        }),
        Command::Db(DbCommand::Move { database, url: to }) => runtime.block_on(async {
            let clusters = admin_clusters(&url, &settings).await?;
            println!("{}", move_db::move_database(&clusters, &database, &to).await?);
            Ok(())
        }),
        Command::Db(DbCommand::Delete { database }) => runtime.block_on(async {
            let clusters = admin_clusters(&url, &settings).await?;
            let deleted = db::databases::delete(&move_db::pool_of(&clusters, &database)?, &database)
                .await
                .map_err(|e| e.message.into_owned())?
                .ok_or_else(|| format!("database {database} not found"))?;
            let mut home = clusters.home().get().await.map_err(|e| e.to_string())?;
            placement::place(&mut home, &database, None).await.map_err(|e| e.to_string())?;
            println!("{}", json!({"deleted": database, "entities": deleted}));
            Ok(())
        }),
        Command::Db(DbCommand::Usage { database }) => runtime.block_on(async {
            let pool = move_db::pool_of(&*admin_clusters(&url, &settings).await?, &database)?;
            println!("{}", admin::usage(&pool, &database).await?);
            Ok(())
        }),
        Command::Key(KeyCommand::Revoke { database, value_id }) => runtime.block_on(async {
            let pool = move_db::pool_of(&*admin_clusters(&url, &settings).await?, &database)?;
            admin::revoke_key(&pool, &database, &value_id).await?;
            println!("{}", json!({"revoked": value_id}));
            Ok(())
        }),
        Command::Export { database, out } => runtime.block_on(async {
            let pool = move_db::pool_of(&*bulk_clusters(&url, &settings).await?, &database)?;
            match out {
                Some(path) => {
                    let header = export::export_to_file(&pool, &database, &path).await?;
                    println!(
                        "{}",
                        json!({"database": database, "entities": header.entities, "values": header.values, "file": path})
                    );
                }
                None => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout());
                    export::export(&pool, &database, &mut stdout).await?;
                }
            }
            Ok(())
        }),
        Command::Import { database, file } => runtime.block_on(async {
            let pool = move_db::pool_of(&*bulk_clusters(&url, &settings).await?, &database)?;
            let input = std::fs::File::open(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let imported = import::import(&pool, &database, std::io::BufReader::new(input))
                .await
                .map_err(|e| format!("{}: {e}", file.display()))?;
            println!(
                "{}",
                json!({"database": database, "entities": imported.entities, "values": imported.values})
            );
            Ok(())
        }),
    }
}

/// Migrates every cluster, then answers small pools for one administration
/// command, on the clusters as the placement table places databases.
async fn admin_clusters(url: &str, settings: &Settings) -> Result<Arc<Clusters>, String> {
    db::migrate(url)?;
    let timeout = settings.database.statement_timeout_ms;
    Ok(move_db::clusters(url, &settings.database.placement, 2, timeout).await?)
}

/// As [`admin_clusters`], without a statement limit: the limit guards the
/// server against slow requests, and would cut an hour-long import short at
/// its largest statement.
async fn bulk_clusters(url: &str, settings: &Settings) -> Result<Arc<Clusters>, String> {
    db::migrate(url)?;
    Ok(move_db::clusters(url, &settings.database.placement, 2, 0).await?)
}

fn init_logging(settings: &Settings) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&settings.log.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match settings.log.format {
        // One object a line: the event's fields at the top, the request span
        // (with `request_id`) under `span` and `spans`.
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Pretty => builder.init(),
    }
}
