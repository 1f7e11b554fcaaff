//! Dropping a tree: [`Db::drop_tree`].
//!
//! The catalog's new image and the freeing of every page of the tree are logged as one
//! structure change (the catalog page's image, one page-free record per page, the
//! end), forced, and only then are the pages freed in memory. Recovery applies a
//! structure change's records only once it finds its end (`recovery.rs`), so a crash
//! leaves the tree either whole (the end not durable: the catalog page cannot have been
//! written out either, it carries the end's LSN) or gone with all its pages free; a
//! page freed here and reused by a later change is reallocated by that change's image,
//! after the free in the log. The catalog page stays latched exclusive from before the
//! first record until it holds the new image, so its records are in log order.
//!
//! Concurrency: the tree map's write guard is held throughout, so no range batch
//! ([`Db::with_tree`]) reads the tree while it is freed and no tree is created or
//! dropped meanwhile; a transaction holding a lock on one of its keys makes the drop
//! fail (`TreeBusy`).

use crate::Result;
use crate::btree::BTree;
use crate::catalog::Catalog;
use crate::page::ExclusivePage;
use crate::wal::{Durability, Kind, Lsn, RecordHead};

use super::config::DbError;
use super::handle::Db;
use super::store::DbStore;

impl<S: DbStore> Db<S> {
    /// Drops tree `name`: removes it from the catalog and frees its pages, durably
    /// (forced before it returns, unless durability is `none`); a crash at any point
    /// leaves the tree whole or gone. The name may be used again afterwards.
    ///
    /// Waits for range batches reading any tree to end, and blocks other tree
    /// operations that need the tree map while it runs (it holds the map's write
    /// guard; its time grows with the tree's pages, each of which it reads).
    ///
    /// # Errors
    /// `NoSuchTree`; `TreeBusy` if a transaction holds a lock on one of its keys (it
    /// has written to the tree and not ended); `Corrupted` if the tree's pages do not
    /// form a tree (nothing is changed then); the log's errors (the database then
    /// refuses all work, and recovery decides whether the drop happened); the store's
    /// errors while freeing pages after the drop was logged (the tree is gone, the
    /// pages not yet freed stay allocated until a recovery redoes the frees).
    pub fn drop_tree(&self, name: &str) -> Result<()> {
        self.check_alive()?;
        let mut trees = self.trees.write();
        let Some(&root) = trees.get(name) else {
            return Err(DbError::NoSuchTree { name: name.into() }.into());
        };
        if let Some(owner) = self.locks.owner_in(root) {
            return Err(DbError::TreeBusy {
                tree: name.into(),
                what: format!("{owner} holds a lock on one of its keys"),
            }
            .into());
        }
        // 1. Every page of the tree (nothing changes if this fails).
        let pages = BTree::open(&self.store, root)?.pages()?;
        assert_eq!(pages.first(), Some(&root), "{name}: the walk of the tree did not start at its root");
        // 2. The catalog without the tree, logged before it is written, with the frees.
        let mut prepared = Catalog::prepare_drop(&self.store, name)?;
        assert_eq!(prepared.root, root, "{name}: the catalog and the tree map disagree on the root");
        let catalog = self.store.catalog_page();
        let logged = if self.durability == Durability::None {
            None
        } else {
            let smo = self.smo_begin();
            let image = self.smo_image(smo, catalog, &prepared.image)?;
            for &pid in &pages {
                self.wal.append(&RecordHead::new(Kind::PageFree, smo, Lsn::NONE).page(pid.0), &[])?;
            }
            let end = self.wal.append(&RecordHead::new(Kind::SmoEnd, smo, Lsn::NONE), &[])?;
            Some((image, end))
        };
        prepared.page.copy_from_slice(&prepared.image);
        if let Some((image, end)) = logged {
            // As in `create_tree`: the frame learns the image's LSN before the end's.
            prepared.page.set_page_lsn(image);
            prepared.page.image_logged();
            prepared.page.set_page_lsn(end);
        }
        drop(prepared);
        if let Some((_, end)) = logged {
            // 3. Durable before any page is freed: a freed page may be reused (and
            //    written out) at once.
            self.wal.flush_until(end.advance(1))?;
        }
        trees.remove(name);
        // 4. The pages go back to the store.
        for pid in pages {
            let page = self.store.fix_exclusive(pid)?;
            self.store.free(page)?;
        }
        Ok(())
    }
}
