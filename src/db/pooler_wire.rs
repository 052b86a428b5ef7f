//! The wire of a connection through a transaction-pooling PgBouncer, which
//! (before 1.21) keeps no prepared statements: it may hand each Sync-ended
//! exchange to another server connection. The driver prepares a statement
//! under a name in one exchange (Parse, Describe, Sync) and runs it in the
//! next (Bind, Execute, Sync), so the name is often unknown where it runs.
//!
//! On the way out, a named Parse becomes an unnamed one (its description
//! reaches the driver as before), and each Bind of that name is preceded by
//! its Parse again: every statement is parsed and run within one exchange,
//! on whichever server PgBouncer picks, in the one round trip a cached
//! statement costs. On the way back, the ParseComplete of each Parse added
//! here is taken out. A Close of a name passes unchanged: no server holds the
//! name, and closing an unknown statement is no error.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BufMut, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes for the server kept before a write waits for the socket.
const HIGH_WATER: usize = 256 * 1024;

/// The rewriting, apart from the socket.
#[derive(Default)]
pub(super) struct Rewriter {
    /// The startup message (no type byte) has gone.
    started: bool,
    /// A statement's name → its Parse, unnamed.
    statements: HashMap<Vec<u8>, Vec<u8>>,
    /// Per exchange sent and not yet answered with ReadyForQuery, per Parse
    /// in it: whether its ParseComplete is ours to take out. The first is
    /// the startup's.
    exchanges: VecDeque<VecDeque<bool>>,
    /// The exchange being sent (no Sync yet).
    open: VecDeque<bool>,
}

impl Rewriter {
    pub(super) fn new() -> Rewriter {
        Rewriter {
            exchanges: VecDeque::from([VecDeque::new()]),
            ..Rewriter::default()
        }
    }

    /// Moves the complete messages at the start of `from_client` to `to_server`, rewritten.
    pub(super) fn client_bytes(&mut self, from_client: &mut BytesMut, to_server: &mut BytesMut) {
        loop {
            if !self.started {
                // the startup message: a length (counting itself), no type byte
                let Some(length) = from_client.get(..4).map(read_length) else {
                    return;
                };
                if from_client.len() < length {
                    return;
                }
                to_server.extend_from_slice(&from_client.split_to(length));
                self.started = true;
                continue;
            }
            let Some(length) = message_length(from_client) else {
                return;
            };
            let message = from_client.split_to(length);
            self.client_message(&message, to_server);
        }
    }

    fn client_message(&mut self, message: &[u8], out: &mut BytesMut) {
        let body = &message[5..];
        match message[0] {
            b'P' => {
                let (name, rest) = split_cstring(body);
                self.open.push_back(false);
                if name.is_empty() {
                    out.extend_from_slice(message);
                    return;
                }
                let unnamed = build(b'P', &[b"\0", rest]);
                out.extend_from_slice(&unnamed);
                self.statements.insert(name.to_vec(), unnamed);
            }
            b'D' if body.first() == Some(&b'S') && body.len() > 2 => {
                out.extend_from_slice(&build(b'D', &[b"S\0"]));
            }
            b'B' => {
                let (portal, rest) = split_cstring(body);
                let (statement, rest) = split_cstring(rest);
                match self.statements.get(statement) {
                    Some(parse) if !statement.is_empty() => {
                        out.extend_from_slice(parse);
                        self.open.push_back(true);
                        out.extend_from_slice(&build(b'B', &[portal, b"\0\0", rest]));
                    }
                    // unknown: the server answers that it does not exist
                    _ => out.extend_from_slice(message),
                }
            }
            b'C' if body.first() == Some(&b'S') => {
                self.statements.remove(split_cstring(&body[1..]).0);
                out.extend_from_slice(message);
            }
            // each Sync, simple Query and function call ends an exchange with one ReadyForQuery
            b'S' | b'Q' | b'F' => {
                self.exchanges.push_back(std::mem::take(&mut self.open));
                out.extend_from_slice(message);
            }
            _ => out.extend_from_slice(message),
        }
    }

    /// Moves the complete messages at the start of `from_server` to
    /// `to_client`, without the ParseCompletes of the Parses added here.
    pub(super) fn server_bytes(&mut self, from_server: &mut BytesMut, to_client: &mut BytesMut) {
        while let Some(length) = message_length(from_server) {
            let message = from_server.split_to(length);
            match message[0] {
                b'1' => {
                    let exchange = self.exchanges.front_mut().unwrap_or(&mut self.open);
                    if exchange.pop_front() == Some(true) {
                        continue;
                    }
                }
                // an error skips the rest of its exchange: its Parses get no answer
                b'Z' => {
                    self.exchanges.pop_front();
                }
                _ => {}
            }
            to_client.extend_from_slice(&message);
        }
    }
}

/// A message's length with its type byte, once all of it is in `buffer`.
fn message_length(buffer: &[u8]) -> Option<usize> {
    let length = 1 + read_length(buffer.get(1..5)?);
    (buffer.len() >= length).then_some(length)
}

fn read_length(bytes: &[u8]) -> usize {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize
}

/// A NUL-terminated string and what follows its NUL.
fn split_cstring(bytes: &[u8]) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == 0) {
        Some(end) => (&bytes[..end], &bytes[end + 1..]),
        None => (bytes, &[]),
    }
}

/// A message of type `kind` whose body is `parts` in turn.
fn build(kind: u8, parts: &[&[u8]]) -> Vec<u8> {
    let length = 4 + parts.iter().map(|part| part.len()).sum::<usize>();
    let mut message = Vec::with_capacity(1 + length);
    message.push(kind);
    message.put_u32(length as u32);
    for part in parts {
        message.extend_from_slice(part);
    }
    message
}

/// A socket whose traffic goes through a [`Rewriter`].
pub(super) struct Wire<S> {
    socket: S,
    rewriter: Rewriter,
    from_client: BytesMut,
    to_server: BytesMut,
    from_server: BytesMut,
    to_client: BytesMut,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Wire<S> {
    pub(super) fn new(socket: S) -> Wire<S> {
        Wire {
            socket,
            rewriter: Rewriter::new(),
            from_client: BytesMut::new(),
            to_server: BytesMut::new(),
            from_server: BytesMut::new(),
            to_client: BytesMut::new(),
        }
    }

    /// Writes what is ready for the server.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.to_server.is_empty() {
            let written = ready!(Pin::new(&mut self.socket).poll_write(cx, &self.to_server))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.to_server.advance(written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Wire<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let wire = &mut *self;
        if wire.to_server.len() >= HIGH_WATER {
            ready!(wire.drain(cx))?;
        }
        wire.from_client.extend_from_slice(bytes);
        wire.rewriter.client_bytes(&mut wire.from_client, &mut wire.to_server);
        // send what it can now; the rest goes on the next write or flush
        if let Poll::Ready(Err(error)) = wire.drain(cx) {
            return Poll::Ready(Err(error));
        }
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Wire<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, into: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let wire = &mut *self;
        loop {
            if !wire.to_client.is_empty() {
                let count = wire.to_client.len().min(into.remaining());
                into.put_slice(&wire.to_client.split_to(count));
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut wire.socket).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return Poll::Ready(Ok(())); // the server closed the connection
            }
            wire.from_server.extend_from_slice(read.filled());
            wire.rewriter.server_bytes(&mut wire.from_server, &mut wire.to_client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        build(kind, &[body])
    }

    /// A rewriter past startup, with `client` sent; answers what went to the server.
    fn sent(rewriter: &mut Rewriter, client: &[Vec<u8>]) -> Vec<u8> {
        let mut from_client = BytesMut::from(&client.concat()[..]);
        let mut to_server = BytesMut::new();
        rewriter.client_bytes(&mut from_client, &mut to_server);
        assert!(from_client.is_empty());
        to_server.to_vec()
    }

    fn answered(rewriter: &mut Rewriter, server: &[Vec<u8>]) -> Vec<u8> {
        let mut from_server = BytesMut::from(&server.concat()[..]);
        let mut to_client = BytesMut::new();
        rewriter.server_bytes(&mut from_server, &mut to_client);
        to_client.to_vec()
    }

    fn started() -> Rewriter {
        let mut rewriter = Rewriter::new();
        let startup = [0, 0, 0, 8, 0, 3, 0, 0].to_vec();
        assert_eq!(sent(&mut rewriter, std::slice::from_ref(&startup)), startup);
        assert_eq!(answered(&mut rewriter, &[message(b'Z', b"I")]), message(b'Z', b"I"));
        rewriter
    }

    #[test]
    fn a_named_statement_is_prepared_unnamed_and_parsed_again_with_each_bind() {
        let mut rewriter = started();
        let parse = message(b'P', b"s7\0SELECT $1\0\0\x01\0\0\0\x19");
        let unnamed = message(b'P', b"\0SELECT $1\0\0\x01\0\0\0\x19");
        let prepare = [parse, message(b'D', b"Ss7\0"), message(b'S', b"")];
        let expected = [unnamed.clone(), message(b'D', b"S\0"), message(b'S', b"")].concat();
        assert_eq!(sent(&mut rewriter, &prepare), expected);
        let description = [
            message(b'1', b""),
            message(b't', b"\0\x01\0\0\0\x19"),
            message(b'n', b""),
            message(b'Z', b"I"),
        ];
        assert_eq!(answered(&mut rewriter, &description), description.concat());

        let bind_body = b"\0\0\0\0\0\x01\0\0\0\x01x\0\0";
        let run = [
            message(b'B', &[b"\0s7\0".as_slice(), bind_body].concat()),
            message(b'E', b"\0\0\0\0\0"),
            message(b'S', b""),
        ];
        let rewritten = [
            unnamed,
            message(b'B', &[b"\0\0".as_slice(), bind_body].concat()),
            message(b'E', b"\0\0\0\0\0"),
            message(b'S', b""),
        ];
        assert_eq!(sent(&mut rewriter, &run), rewritten.concat());
        let answer = [message(b'2', b""), message(b'C', b"SELECT 1\0"), message(b'Z', b"I")];
        let with_parse = [&[message(b'1', b"")], answer.as_slice()].concat();
        assert_eq!(answered(&mut rewriter, &with_parse), answer.concat());
    }

    #[test]
    fn an_error_before_the_added_parse_leaves_the_next_exchange_whole() {
        let mut rewriter = started();
        sent(
            &mut rewriter,
            &[message(b'P', b"s1\0SELECT 1\0\0\0"), message(b'S', b"")],
        );
        answered(&mut rewriter, &[message(b'1', b""), message(b'Z', b"I")]);
        // inside a failed transaction the added Parse is skipped and never answered
        sent(
            &mut rewriter,
            &[
                message(b'B', b"\0s1\0\0\0\0\0\0\0"),
                message(b'E', b"\0\0\0\0\0"),
                message(b'S', b""),
            ],
        );
        let failed = [message(b'E', b"SERROR\0\0"), message(b'Z', b"E")];
        assert_eq!(answered(&mut rewriter, &failed), failed.concat());
        sent(&mut rewriter, &[message(b'P', b"\0SELECT 2\0\0\0"), message(b'S', b"")]);
        let next = [message(b'1', b""), message(b'Z', b"I")];
        assert_eq!(answered(&mut rewriter, &next), next.concat());
    }

    #[test]
    fn messages_split_across_writes_are_rewritten_once_whole() {
        let mut rewriter = started();
        let parse = message(b'P', b"s2\0SELECT 1\0\0\0");
        let mut from_client = BytesMut::from(&parse[..4]);
        let mut to_server = BytesMut::new();
        rewriter.client_bytes(&mut from_client, &mut to_server);
        assert!(to_server.is_empty());
        from_client.extend_from_slice(&parse[4..]);
        rewriter.client_bytes(&mut from_client, &mut to_server);
        assert_eq!(to_server.to_vec(), message(b'P', b"\0SELECT 1\0\0\0"));
    }

    #[test]
    fn a_bind_of_an_unknown_name_passes_unchanged() {
        let mut rewriter = started();
        let bind = message(b'B', b"\0s9\0\0\0\0\0\0\0");
        assert_eq!(sent(&mut rewriter, std::slice::from_ref(&bind)), bind);
    }
}
