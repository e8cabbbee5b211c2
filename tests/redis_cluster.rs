//! Redis Cluster, the ground the cluster client stands on, against a real 3-master
//! cluster with a replica each (`redis-server --cluster-enabled yes`, `redis-cli
//! --cluster create`, on free ports in temp dirs): trawl's hash slots are the server's
//! (`CLUSTER KEYSLOT`), a real `CLUSTER SLOTS` reply makes a full table of three
//! masters, and a key sent to the wrong master comes back as a `MOVED` naming the one
//! the table says.

use trawl::client::redis::Value;
use trawl::proto::cluster::{Redirect, SlotTable, key_slot, redirect};
use trawl::testing::{RedisCluster, RedisServer};

fn cluster() -> RedisCluster {
    RedisCluster::start(3, 1).expect("redis-server and redis-cli are needed for this test")
}

#[test]
fn slots_tables_and_redirections_agree_with_a_real_cluster() {
    let c = cluster();
    let node = &c.nodes[0];
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"foo".to_vec(),
        b"{user1000}.following".to_vec(),
        b"foo{}{bar}".to_vec(),
        b"foo{{bar}}zap".to_vec(),
        b"foo{bar}{zap}".to_vec(),
        b"{}".to_vec(),
        b"}{".to_vec(),
        "crawl:{quotes}:requests".as_bytes().to_vec(),
        "ünïcødé".as_bytes().to_vec(),
        vec![0, 255, 123, 1, 125, 7],
    ];
    keys.extend((0..200).map(|i| format!("quotes:requests:{i}").into_bytes()));
    for k in &keys {
        let theirs = node
            .call(&[b"CLUSTER".as_slice(), b"KEYSLOT", k])
            .expect("keyslot")
            .as_int()
            .expect("an integer");
        assert_eq!(
            i64::from(key_slot(k)),
            theirs,
            "{:?}",
            String::from_utf8_lossy(k)
        );
    }

    let reply = node.call(&["CLUSTER", "SLOTS"]).expect("cluster slots");
    let table = SlotTable::from_cluster_slots(&reply, "127.0.0.1").expect("a slot table");
    assert!(table.is_complete());
    assert_eq!(table.masters.len(), 3);
    for i in 0..30 {
        let key = format!("k{i}");
        let slot = key_slot(key.as_bytes());
        let owner = table.master_of(slot).expect("served");
        let right = RedisServer::attach(owner.port);
        assert_eq!(
            right.call(&["SET", &key, "v"]).expect("set"),
            Value::Simple("OK".into())
        );
        let wrong = table
            .masters
            .iter()
            .find(|m| *m != owner)
            .expect("another master");
        let reply = RedisServer::attach(wrong.port)
            .call(&["GET", &key])
            .expect("a reply");
        let Value::Error(message) = reply else {
            panic!("{key} answered by a master that does not own it: {reply:?}");
        };
        assert_eq!(
            redirect(&message),
            Some(Redirect::Moved(slot, owner.clone())),
            "{message}"
        );
    }
}
