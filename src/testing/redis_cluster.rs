//! A real Redis Cluster for tests and benchmarks: `masters × (1 + replicas)`
//! `redis-server --cluster-enabled yes` nodes on free ports in their own temp dirs,
//! joined with `redis-cli --cluster create`, ready when every node says
//! `cluster_state:ok`; stopped with the nodes on drop.

use std::process::Command;
use std::time::{Duration, Instant};

use super::redis_server::{RedisServer, RedisServerOptions};

/// A running cluster.
#[derive(Debug)]
pub struct RedisCluster {
    /// Every node, masters first as `redis-cli` assigned them at creation.
    pub nodes: Vec<RedisServer>,
}

/// `redis-cli`, from `TRAWL_REDIS_CLI` or `PATH`.
fn cli() -> String {
    std::env::var("TRAWL_REDIS_CLI").unwrap_or_else(|_| "redis-cli".into())
}

impl RedisCluster {
    /// Starts `masters` masters with `replicas` replicas each (`cluster-node-timeout`
    /// 2 s, so a failover takes a few seconds).
    ///
    /// # Errors
    ///
    /// `redis-server` or `redis-cli` is missing, a node did not start, or the cluster
    /// did not become ready within 30 s.
    pub fn start(masters: usize, replicas: usize) -> Result<Self, String> {
        let options = RedisServerOptions {
            args: [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
                // A replica's first sync starts at once (the default waits 5 s for
                // more replicas): a failover needs a replica that has synced.
                "--repl-diskless-sync-delay",
                "0",
            ]
            .iter()
            .map(|a| (*a).to_owned())
            .collect(),
            ..RedisServerOptions::default()
        };
        let nodes = (0..masters * (1 + replicas))
            .map(|_| RedisServer::start_with(options.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let out = Command::new(cli())
            .args(["--cluster", "create"])
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} ({e}): install redis-tools or point TRAWL_REDIS_CLI at it",
                    cli()
                )
            })?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let cluster = Self { nodes };
        cluster.wait_ok(Duration::from_secs(30))?;
        if replicas > 0 {
            // A write every replica must receive: the cluster is empty, so FLUSHALL
            // changes nothing but the replication offsets.
            for n in &cluster.nodes {
                if n.call_text(&["INFO", "replication"])
                    .contains("role:master")
                {
                    let _ = n.call(&["FLUSHALL"]);
                }
            }
            cluster.wait_replicas_synced(masters * replicas, Duration::from_secs(30))?;
        }
        Ok(cluster)
    }

    /// Waits until every running node reports `cluster_state:ok`.
    ///
    /// # Errors
    ///
    /// Not within `timeout`.
    pub fn wait_ok(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let ok = self.nodes.iter().all(|n| {
                n.call_text(&["CLUSTER", "INFO"])
                    .contains("cluster_state:ok")
            });
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("the cluster did not reach cluster_state:ok".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until `replicas` nodes are replicas that have processed everything their
    /// master has written (`slave_repl_offset` ≥ the master's non-zero
    /// `master_repl_offset`; `start` writes to every master first). A replica that
    /// never synced refuses to be promoted, and one that did a diskless sync gets its
    /// master's stream only after its first acknowledgement, up to a second later: a
    /// master killed before that takes everything to the grave and the promoted replica
    /// is empty. A test that kills a master waits for this first.
    ///
    /// # Errors
    ///
    /// Not within `timeout`.
    pub fn wait_replicas_synced(&self, replicas: usize, timeout: Duration) -> Result<(), String> {
        let field = |info: &str, name: &str| -> Option<u64> {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
        };
        let deadline = Instant::now() + timeout;
        loop {
            let infos: Vec<(u16, String)> = self
                .nodes
                .iter()
                .map(|n| (n.port(), n.call_text(&["INFO", "replication"])))
                .collect();
            let synced = infos
                .iter()
                .filter(|(_, info)| {
                    info.contains("role:slave") && info.contains("master_link_status:up")
                })
                .filter(|(_, info)| {
                    let master = field(info, "master_port").and_then(|p| {
                        infos
                            .iter()
                            .find(|(port, _)| u64::from(*port) == p)
                            .and_then(|(_, m)| field(m, "master_repl_offset"))
                    });
                    match (field(info, "slave_repl_offset"), master) {
                        (Some(mine), Some(theirs)) => theirs > 0 && mine >= theirs,
                        _ => false,
                    }
                })
                .count();
            if synced >= replicas {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{synced} of the cluster's {replicas} replicas caught up with their masters"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis://127.0.0.1:PORT/0` of the first node (any node will do as a seed).
    pub fn seed_url(&self) -> String {
        self.nodes[0].url(0)
    }
}
