//! One connection that listens for PostgreSQL notifications, kept up.
//!
//! 1. Open a connection of its own (named [`LISTENER_NAME`] on the
//!    server), `LISTEN` on every channel asked for.
//! 2. Say [`Heard::Listening`]: whatever was notified while no connection
//!    listened is lost, so the caller catches up from the tables.
//! 3. Hand on each notification as it arrives.
//! 4. When the connection ends (the server restarted, the backend was
//!    terminated, the network broke), say [`Heard::Lost`], wait (100 ms,
//!    doubling up to 5 s while it keeps failing) and start again.

use std::sync::Arc;
use std::time::Duration;

use rein_core::StoreError;

use super::PgStore;

/// The `application_name` the listening connection has on the server.
pub const LISTENER_NAME: &str = "rein listener";

const FIRST_WAIT: Duration = Duration::from_millis(100);
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// What a [`Listener`] hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Listening (again): catch up on what may have been missed.
    Listening,
    /// A notification on `channel`.
    Notified { channel: String, payload: String },
    /// The listening connection failed or could not be had (why); it is
    /// tried again.
    Lost(String),
}

/// A connection kept listening; it stops when this is dropped.
#[derive(Debug)]
pub struct Listener {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgStore {
    /// Listen on `channels` with a connection of its own (not the pool's),
    /// calling `on` with what is heard (on the PostgreSQL thread: keep it
    /// quick), until the returned [`Listener`] is dropped.
    pub fn listen(
        &self,
        channels: &[&'static str],
        on: impl Fn(Heard) + Send + Sync + 'static,
    ) -> Result<Listener, StoreError> {
        let (store, channels, on) = (self.clone(), channels.to_vec(), Arc::new(on));
        let task = super::runtime::spawn(async move {
            let mut wait = FIRST_WAIT;
            loop {
                match store.listen_once(&channels, on.as_ref()).await {
                    // It listened, then the connection ended: try again soon.
                    Ok(why) => {
                        on(Heard::Lost(why));
                        wait = FIRST_WAIT;
                    }
                    Err(e) => {
                        on(Heard::Lost(e.to_string()));
                        wait = (wait * 2).min(LONGEST_WAIT);
                    }
                }
                tokio::time::sleep(wait).await;
            }
        })?;
        Ok(Listener { task })
    }

    /// One listening connection, until it ends (why, once it listened).
    async fn listen_once(
        &self,
        channels: &[&'static str],
        on: &(dyn Fn(Heard) + Send + Sync),
    ) -> Result<String, StoreError> {
        let target = self.pool.target();
        let failed = |e: tokio_postgres::Error| {
            StoreError::Other(target.scrub(&format!(
                "cannot listen for notifications on PostgreSQL {}: {e}",
                target.shown
            )))
        };
        let (client, mut heard) = self
            .pool
            .open_listening(LISTENER_NAME)
            .await
            .map_err(|e| e.into_store(target))?;
        for channel in channels {
            // Channel names are the program's own identifiers.
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(failed)?;
        }
        on(Heard::Listening);
        while let Some(n) = heard.recv().await {
            on(Heard::Notified {
                channel: n.channel().to_string(),
                payload: n.payload().to_string(),
            });
        }
        Ok(format!(
            "the connection listening on PostgreSQL {} closed",
            target.shown
        ))
    }
}
