(** Proofs of rules/library/layout.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_layout.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem pack_cols : pack_cols_stmt.
Proof.
  unfold pack_cols_stmt; intros; tunfold; intros s; simpl.
  bcases; finish_dm.
Qed.

Theorem pad_read : pad_read_stmt.
Proof.
  unfold pad_read_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

Theorem pad_rows : pad_rows_stmt.
Proof.
  unfold pad_rows_stmt; intros; tunfold; intros s; simpl.
  bcases; finish.
Qed.

End Proofs.
