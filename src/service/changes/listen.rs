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
use crate::db::replicas::RIGHTS_CHANNEL;
use crate::service::replicas::Replicas;

/// The channel the change log's trigger notifies.
const CHANNEL: &str = "eds_changes";
/// Wait before connecting again after the connection failed or closed.
const RECONNECT: Duration = Duration::from_secs(1);

/// Listens for as long as the server runs, reconnecting when the connection
/// drops; `url` is `database.direct_url` (or `database.url`). Rights changes
/// announced on [`RIGHTS_CHANNEL`] go to the read replicas' routing.
pub async fn listen(hub: Arc<ChangeHub>, replicas: Arc<Replicas>, url: String) {
    let notified = Notified { hub, replicas };
    loop {
        if let Err(error) = listen_once(&notified, &url).await {
            tracing::warn!(%error, "the change feed's wake-up connection failed; reconnecting");
        }
        tokio::time::sleep(RECONNECT).await;
    }
}

/// Where notifications go.
struct Notified {
    hub: Arc<ChangeHub>,
    replicas: Arc<Replicas>,
}

impl Notified {
    fn deliver(&self, note: &tokio_postgres::Notification) {
        if note.channel() == RIGHTS_CHANNEL {
            self.replicas.learn(note.payload());
        } else {
            self.hub.wake(note.payload());
        }
    }
}

async fn listen_once(notified: &Notified, url: &str) -> Result<(), tokio_postgres::Error> {
    let hub = &notified.hub;
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let (listening, messages_done) = {
        let statement = format!("LISTEN {CHANNEL}; LISTEN {RIGHTS_CHANNEL}");
        let listen = client.batch_execute(&statement);
        tokio::pin!(listen);
        // the connection is driven by reading its messages, also while LISTEN runs
        loop {
            tokio::select! {
                done = &mut listen => break (done, false),
                message = messages.next() => match message {
                    Some(Ok(AsyncMessage::Notification(note))) => notified.deliver(&note),
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
            notified.deliver(&note);
        }
    }
    drop(client);
    Ok(())
}
