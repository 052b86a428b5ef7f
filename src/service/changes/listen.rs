//! The process's wake-up connection: one direct (not pooled) PostgreSQL
//! connection that `LISTEN`s on `eds_changes`, where the change log's
//! trigger notifies each database a commit logged changes of. A notification
//! only wakes that database's reader; the log carries the changes. While the
//! connection is down the readers' own polling keeps streams within a second.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

use super::hub::ChangeHub;

/// The channel the change log's trigger notifies.
const CHANNEL: &str = "eds_changes";
/// Wait before connecting again after the connection failed or closed.
const RECONNECT: Duration = Duration::from_secs(1);

/// Listens for as long as the server runs, reconnecting when the connection
/// drops; `url` is `database.direct_url` (or `database.url`).
pub async fn listen(hub: Arc<ChangeHub>, url: String) {
    loop {
        if let Err(error) = listen_once(&hub, &url).await {
            tracing::warn!(%error, "the change feed's wake-up connection failed; reconnecting");
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

async fn listen_once(hub: &ChangeHub, url: &str) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let (listening, messages_done) = {
        let statement = format!("LISTEN {CHANNEL}");
        let listen = client.batch_execute(&statement);
        tokio::pin!(listen);
        // the connection is driven by reading its messages, also while LISTEN runs
        loop {
            tokio::select! {
                done = &mut listen => break (done, false),
                message = messages.next() => match message {
                    Some(Ok(AsyncMessage::Notification(note))) => hub.wake(note.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => return Err(error),
                    None => break (Ok(()), true),
                },
            }
        }
    };
    listening?;
    if messages_done {
        return Ok(());
    }
    // notifications sent while not listening were missed
    hub.wake_all();
    while let Some(message) = messages.next().await {
        if let AsyncMessage::Notification(note) = message? {
            hub.wake(note.payload());
        }
    }
    drop(client);
    Ok(())
}
