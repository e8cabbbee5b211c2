//! Redis Sentinel, the sans-IO part: the configuration of a connection to one sentinel,
//! what its answer to `SENTINEL get-master-addr-by-name` means and what a
//! `+switch-master` announcement says. The talking is in `sentinel_link`.

use crate::proto::resp::Value;

use super::config::RedisConfig;

/// The configuration of a connection to the sentinel at `host:port`: the master's
/// timeouts capped at 5 s (5 s where the master's are off), the sentinels' password,
/// database 0, few buffered commands, no TLS.
pub fn sentinel_client_config(master: &RedisConfig, host: &str, port: u16) -> RedisConfig {
    let cap = |t: f64| if t > 0.0 { t.min(5.0) } else { 5.0 };
    RedisConfig {
        host: host.to_owned(),
        port,
        tls: None,
        username: None,
        password: master.sentinel.as_ref().and_then(|s| s.password.clone()),
        db: 0,
        connect_timeout: cap(master.connect_timeout),
        command_timeout: cap(master.command_timeout),
        backoff_initial: cap(master.connect_timeout),
        backoff_max: cap(master.connect_timeout),
        max_buffered: 4,
        sentinel: None,
    }
}

/// The master's address from a sentinel's reply.
///
/// # Errors
///
/// The sentinel does not know the master (a nil reply) or answered something else.
pub fn master_address(reply: &Value) -> Result<(String, u16), String> {
    match reply {
        Value::Nil => Err("it does not monitor that master".into()),
        Value::Array(a) if a.len() == 2 => {
            let host = a[0]
                .as_bytes()
                .and_then(|b| std::str::from_utf8(b).ok())
                .filter(|h| !h.is_empty());
            let port = a[1]
                .as_bytes()
                .and_then(|b| std::str::from_utf8(b).ok())
                .and_then(|p| p.parse::<u16>().ok());
            match (host, port) {
                (Some(h), Some(p)) => Ok((h.to_owned(), p)),
                _ => Err(format!("an address that cannot be used: {reply:?}")),
            }
        }
        other => Err(format!("an unexpected reply: {other:?}")),
    }
}

/// The new address of master `master` from the payload of a `+switch-master`
/// announcement (`<name> <old ip> <old port> <new ip> <new port>`); `None` for
/// another master's failover or a payload that is not one.
pub fn switch_master(payload: &[u8], master: &str) -> Option<(String, u16)> {
    let text = std::str::from_utf8(payload).ok()?;
    let mut words = text.split_ascii_whitespace();
    let name = words.next()?;
    let (_old_ip, _old_port) = (words.next()?, words.next()?);
    let (ip, port) = (words.next()?, words.next()?);
    if name != master || words.next().is_some() || ip.is_empty() {
        return None;
    }
    Some((ip.to_owned(), port.parse().ok()?))
}

/// Whether an error reply says this server must not take writes now: it is a replica
/// (`READONLY`: a failover demoted it) or a master that lost its replicas
/// (`NOREPLICAS`, with `min-replicas-to-write`: it may be the old master of a failover
/// in progress). Either way the client asks the sentinels again and sends the command
/// once more.
pub fn is_readonly(message: &str) -> bool {
    message.starts_with("READONLY")
        || message.starts_with("NOREPLICAS")
        || message.contains("READONLY You can't write")
        || message.contains("NOREPLICAS Not enough good replicas")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn master_addresses() {
        let ok = Value::Array(vec![
            Value::Bulk(b"10.0.0.5".to_vec()),
            Value::Bulk(b"6380".to_vec()),
        ]);
        assert_eq!(master_address(&ok), Ok(("10.0.0.5".into(), 6380)));
        assert!(master_address(&Value::Nil).is_err());
        let bad = Value::Array(vec![Value::Bulk(b"h".to_vec()), Value::Bulk(b"x".to_vec())]);
        assert!(master_address(&bad).is_err());
        assert!(master_address(&Value::Integer(1)).is_err());
    }

    #[test]
    fn switch_master_announcements() {
        // The payload as Redis 7's sentinel publishes it (sentinel.c,
        // sentinelEvent(LL_WARNING,"+switch-master",...,"%s %s %d %s %d")).
        let p = b"m 127.0.0.1 6379 127.0.0.1 6380";
        assert_eq!(switch_master(p, "m"), Some(("127.0.0.1".into(), 6380)));
        assert_eq!(switch_master(p, "other"), None);
        assert_eq!(
            switch_master(b"m 127.0.0.1 6379 ::1 7000", "m"),
            Some(("::1".into(), 7000))
        );
        assert_eq!(switch_master(b"m 127.0.0.1 6379 127.0.0.1", "m"), None);
        assert_eq!(switch_master(b"m 127.0.0.1 6379 127.0.0.1 port", "m"), None);
        assert_eq!(switch_master(b"m a 1 b 2 extra", "m"), None);
        assert_eq!(switch_master(b"\xff", "m"), None);
        assert_eq!(switch_master(b"", "m"), None);
    }

    #[test]
    fn readonly_errors() {
        assert!(is_readonly(
            "READONLY You can't write against a read only replica."
        ));
        assert!(is_readonly(
            "ERR Error running script: @user_script:1: READONLY You can't write against a read only replica."
        ));
        assert!(is_readonly("NOREPLICAS Not enough good replicas to write."));
        assert!(!is_readonly("ERR unknown command"));
    }
}
