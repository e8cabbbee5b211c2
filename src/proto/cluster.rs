//! Redis Cluster, sans-IO: which of the 16,384 hash slots a key lives in (CRC16/XMODEM
//! of the key, or of its `{hash tag}`), the slot table a `CLUSTER SLOTS` reply
//! describes, and what a `MOVED` / `ASK` redirection says.

use super::resp::Value;

/// The number of hash slots.
pub const SLOTS: usize = 16_384;

/// CRC16/XMODEM (polynomial 0x1021, initial 0), as Redis Cluster computes it.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of `key`: only the part between the first `{` and the next `}` counts
/// when it is not empty (a hash tag), so `{crawl}:queue` and `{crawl}:meta` share one.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS as u16
}

/// A master as a `CLUSTER SLOTS` reply names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeAddr {
    /// Its host (an address, or a name the node announces).
    pub host: String,
    /// Its port.
    pub port: u16,
}

impl std::fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Slot → master, from `CLUSTER SLOTS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotTable {
    /// The masters, in the order first met.
    pub masters: Vec<NodeAddr>,
    /// For each slot, an index into `masters` (`u16::MAX`: no master serves it).
    pub owner: Vec<u16>,
}

impl SlotTable {
    /// Parses a `CLUSTER SLOTS` reply: `[[start, end, [host, port, id...], replicas...],
    /// ...]`. `default_host` stands for an empty host (a node that does not know its
    /// own address answers with the address it was reached on).
    ///
    /// # Errors
    ///
    /// The reply is not of that shape.
    pub fn from_cluster_slots(reply: &Value, default_host: &str) -> Result<Self, String> {
        let ranges = reply
            .as_array()
            .ok_or_else(|| format!("CLUSTER SLOTS answered {reply:?}"))?;
        let mut table = Self {
            masters: Vec::new(),
            owner: vec![u16::MAX; SLOTS],
        };
        for r in ranges {
            let parts = r
                .as_array()
                .filter(|p| p.len() >= 3)
                .ok_or_else(|| format!("a slot range that is not [start, end, master]: {r:?}"))?;
            let start = parts[0].as_int().ok_or("a slot range without a start")?;
            let end = parts[1].as_int().ok_or("a slot range without an end")?;
            if !(0..SLOTS as i64).contains(&start) || !(start..SLOTS as i64).contains(&end) {
                return Err(format!("a slot range out of bounds: {start}-{end}"));
            }
            let node = parts[2]
                .as_array()
                .filter(|n| n.len() >= 2)
                .ok_or("a master that is not [host, port, ...]")?;
            let host = node[0]
                .as_bytes()
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or("a master without a host")?;
            let host = if host.is_empty() || host == "?" {
                default_host
            } else {
                host
            };
            let port = node[1]
                .as_int()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or("a master without a port")?;
            let addr = NodeAddr {
                host: host.to_owned(),
                port,
            };
            let idx = match table.masters.iter().position(|m| *m == addr) {
                Some(i) => i,
                None => {
                    table.masters.push(addr);
                    table.masters.len() - 1
                }
            };
            for slot in start..=end {
                table.owner[slot as usize] = idx as u16;
            }
        }
        Ok(table)
    }

    /// The master serving `slot`, if any.
    pub fn master_of(&self, slot: u16) -> Option<&NodeAddr> {
        self.owner
            .get(slot as usize)
            .and_then(|&i| self.masters.get(usize::from(i)))
    }

    /// Whether every slot is served.
    pub fn is_complete(&self) -> bool {
        self.owner.iter().all(|&i| i != u16::MAX)
    }
}

/// A redirection in an error reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    /// `MOVED slot host:port`: the slot lives there now (update the table).
    Moved(u16, NodeAddr),
    /// `ASK slot host:port`: this one command goes there, after `ASKING`.
    Ask(u16, NodeAddr),
}

/// The redirection an error message carries, if it is one.
pub fn redirect(message: &str) -> Option<Redirect> {
    let mut words = message.split(' ');
    let kind = words.next()?;
    let slot: u16 = words.next()?.parse().ok()?;
    let addr = words.next()?;
    let (host, port) = addr.rsplit_once(':')?;
    let addr = NodeAddr {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
        port: port.parse().ok()?,
    };
    if usize::from(slot) >= SLOTS {
        return None;
    }
    match kind {
        "MOVED" => Some(Redirect::Moved(slot, addr)),
        "ASK" => Some(Redirect::Ask(slot, addr)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // The CRC-16/XMODEM check value (the CRC of "123456789").
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn hash_tags() {
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        // An empty tag does not count: the whole key is hashed.
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
    }

    #[test]
    fn redirects() {
        assert_eq!(
            redirect("MOVED 3999 127.0.0.1:6381"),
            Some(Redirect::Moved(
                3999,
                NodeAddr {
                    host: "127.0.0.1".into(),
                    port: 6381
                }
            ))
        );
        assert!(matches!(
            redirect("ASK 3999 127.0.0.1:6381"),
            Some(Redirect::Ask(3999, _))
        ));
        assert_eq!(redirect("ERR wrong"), None);
        assert_eq!(redirect("MOVED 99999 h:1"), None);
    }

    #[test]
    fn slot_tables() {
        let node = |h: &str, p: i64| {
            Value::Array(vec![
                Value::Bulk(h.as_bytes().to_vec()),
                Value::Integer(p),
                Value::Bulk(b"id".to_vec()),
            ])
        };
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Integer(0), Value::Integer(8191), node("a", 1)]),
            Value::Array(vec![
                Value::Integer(8192),
                Value::Integer(16383),
                node("", 2),
                node("r", 3),
            ]),
        ]);
        let t = SlotTable::from_cluster_slots(&reply, "seed").expect("parses");
        assert!(t.is_complete());
        assert_eq!(t.master_of(0).map(|n| n.port), Some(1));
        assert_eq!(t.master_of(16383).map(|n| n.host.as_str()), Some("seed"));
        assert_eq!(t.masters.len(), 2);
        assert!(SlotTable::from_cluster_slots(&Value::Integer(1), "x").is_err());
    }
}
