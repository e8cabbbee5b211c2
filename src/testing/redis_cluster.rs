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
        cluster.wait_replicas_synced(Duration::from_secs(30))?;
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

    /// Waits until every running replica's link to its master is up
    /// (`master_link_status:up`). A replica that never synced refuses to be promoted
    /// (its data is older than `cluster-replica-validity-factor` allows), so a test
    /// that kills a master waits for this first.
    ///
    /// # Errors
    ///
    /// Not within `timeout`.
    pub fn wait_replicas_synced(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let synced = self.nodes.iter().all(|n| {
                let info = n.call_text(&["INFO", "replication"]);
                info.is_empty()
                    || info.contains("role:master")
                    || info.contains("master_link_status:up")
            });
            if synced {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("the cluster's replicas did not finish their first sync".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis://127.0.0.1:PORT/0` of the first node (any node will do as a seed).
    pub fn seed_url(&self) -> String {
        self.nodes[0].url(0)
    }
}
