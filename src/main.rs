//! The `eds` command: serve, migrate, and administer databases and keys.

use std::io::IsTerminal;

use clap::{Parser, Subcommand};
use eds::app::{self, ClusterGuard};
use eds::config::{LogFormat, Settings};
use eds::db;
use eds::model::API_KEY_PROPERTY;
use eds::model::value::{Value, ValueInput};
use eds::write::{self, WriteOp, WriteOutcome, WriteRequest};
use serde_json::json;

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
}

fn main() {
    let cli = Cli::parse();
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
    match cli.command {
        Command::Serve => runtime.block_on(app::serve(settings, url)),
        Command::Migrate => {
            let applied = db::migrate(&url)?;
            println!("{}", json!({ "applied": applied }));
            Ok(())
        }
        Command::Db(DbCommand::Create {
            database,
            email,
            person_name,
        }) => runtime.block_on(async {
            db::migrate(&url)?;
            let pool = db::pool(&url, 2, settings.database.statement_timeout_ms)?;
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
            db::migrate(&url)?;
            let pool = db::pool(&url, 2, settings.database.statement_timeout_ms)?;
            let request = WriteRequest {
                db: database,
                actor: person.clone(),
                op: WriteOp::AddValues {
                    entity_id: person,
                    values: vec![ValueInput {
                        prop: API_KEY_PROPERTY.to_owned(),
                        replaces: None,
                        value: Value::String("generate".to_owned()),
                        language: None,
                    }],
                },
            };
            let outcome = write::apply(&pool, request).await.map_err(|e| e.message.into_owned())?;
            let WriteOutcome::Written { values, .. } = outcome else {
                return Err("no key was written".to_owned());
            };
            println!("{}", json!({ "api_key": values[0]["string"] }));
            Ok(())
        }),
    }
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
