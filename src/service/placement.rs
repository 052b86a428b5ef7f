//! Databases on several clusters, as a process serves them: following the
//! placement table (told by `NOTIFY`, and rereading it every few seconds).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use crate::db::placement::{self, Clusters};

/// How often a process rereads the placement table even when not told:
/// every process follows a move within 5 s without its `NOTIFY`.
const REREAD: Duration = Duration::from_secs(2);

/// Follows the placement table for as long as the process runs: rereads it
/// when told on `listen_url` (the home cluster's direct URL), and every
/// [`REREAD`] anyway.
pub async fn follow(clusters: Arc<Clusters>, listen_url: String) {
    let told = Arc::new(tokio::sync::Notify::new());
    let listener = told.clone();
    tokio::spawn(async move {
        loop {
            if let Err(error) = listen_once(&listener, &listen_url).await {
                tracing::warn!(%error, "the placement listener's connection failed; reconnecting");
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    loop {
        match clusters.reload().await {
            Ok(changed) if !changed.is_empty() => tracing::info!(?changed, "databases placed anew"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "rereading the placement table failed"),
        }
        let _ = tokio::time::timeout(REREAD, told.notified()).await;
    }
}

async fn listen_once(told: &tokio::sync::Notify, url: &str) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let statement = format!("LISTEN {}", placement::CHANNEL);
    let listen = client.batch_execute(&statement);
    tokio::pin!(listen);
    // the connection is driven by reading its messages, also while LISTEN runs
    loop {
        tokio::select! {
            done = &mut listen => { done?; break; }
            message = messages.next() => match message {
                Some(Ok(AsyncMessage::Notification(_))) => told.notify_one(),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            },
        }
    }
    // what changed while not listening is read now
    told.notify_one();
    while let Some(message) = messages.next().await {
        if let AsyncMessage::Notification(_) = message? {
            told.notify_one();
        }
    }
    Ok(())
}
