//! One Redis connection as a [`Protocol`]: bytes in through the RESP parser, each reply
//! handed to the client in order; the loss of the connection reported once. It holds
//! no borrow while it calls the client, which may fire Deferreds whose callbacks send
//! more commands or close the client.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use crate::defer::Failure;
use crate::net::{ConnectionLost, Protocol, Transport};
use crate::proto::resp::{Parser, Value};

/// What a connection reports to the client that owns it.
pub(super) trait Replies {
    /// `n` bytes came in (the client's counters).
    fn note_received(&self, n: usize);
    /// A reply, for the oldest command awaiting one on connection `generation`.
    fn on_reply(&self, generation: u64, value: Value);
    /// Connection `generation` is gone, and why.
    fn on_lost(&self, generation: u64, why: String);
    /// The server's address, for log lines.
    fn display(&self) -> String;
}

/// The protocol of one connection, tagged with the generation the client gave it so a
/// late event from an old connection is ignored.
pub(super) struct Connection {
    client: Weak<dyn Replies>,
    pub(super) generation: u64,
    transport: RefCell<Option<Rc<dyn Transport>>>,
    st: RefCell<ParseState>,
}

struct ParseState {
    parser: Parser,
    buf: Vec<u8>,
}

impl Connection {
    pub(super) fn new(client: Weak<dyn Replies>, generation: u64) -> Rc<Self> {
        Rc::new(Self {
            client,
            generation,
            transport: RefCell::new(None),
            st: RefCell::new(ParseState {
                parser: Parser::new(),
                buf: Vec::new(),
            }),
        })
    }

    /// The transport, once made.
    pub(super) fn transport(&self) -> Option<Rc<dyn Transport>> {
        self.transport.borrow().clone()
    }

    /// Parses what `data` completes: the replies, or the protocol error.
    fn parse(&self, data: &[u8]) -> Result<Vec<Value>, String> {
        let mut st = self.st.borrow_mut();
        let ParseState { parser, buf } = &mut *st;
        let mut values = Vec::new();
        // Parse straight from `data` when nothing is left over from the last read.
        let from_data = buf.is_empty();
        if !from_data {
            buf.extend_from_slice(data);
        }
        let input: &[u8] = if from_data { data } else { buf };
        let mut pos = 0;
        loop {
            match parser.parse(&input[pos..]) {
                Ok((used, v)) => {
                    pos += used;
                    match v {
                        Some(v) => values.push(v),
                        None if used == 0 || pos == input.len() => break,
                        None => {}
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        if from_data {
            buf.extend_from_slice(&data[pos..]);
        } else {
            buf.drain(..pos);
        }
        Ok(values)
    }
}

impl Protocol for Connection {
    fn connection_made(&self, transport: Rc<dyn Transport>) {
        *self.transport.borrow_mut() = Some(transport);
    }

    fn data_received(&self, data: &[u8]) {
        let Some(client) = self.client.upgrade() else {
            return;
        };
        client.note_received(data.len());
        match self.parse(data) {
            Ok(values) => {
                for v in values {
                    client.on_reply(self.generation, v);
                }
            }
            Err(e) => {
                log::error!("Redis {}: {e}; dropping the connection", client.display());
                let t = self.transport();
                if let Some(t) = t {
                    t.abort_connection();
                }
            }
        }
    }

    fn connection_lost(&self, reason: Failure) {
        self.transport.borrow_mut().take();
        if let Some(client) = self.client.upgrade() {
            let why = if reason.check::<ConnectionLost>()
                || reason.check::<crate::net::ConnectionDone>()
            {
                reason.error().to_string()
            } else {
                reason.describe()
            };
            client.on_lost(self.generation, why);
        }
    }
}
