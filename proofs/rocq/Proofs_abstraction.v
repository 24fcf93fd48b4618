(** Proofs of rules/library/abstraction.rules. A hoisted let's reads [y[i]] at an [i]
    in range are, pointwise, the value it replaced: once the range test is decided, the
    read [Acc (Gen 0 n v) i] is convertible (by iota and eta) to [v i], so the body
    [b i] receives the same tensor on both sides and no extensionality is needed. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_abstraction.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem let_intro : let_intro_stmt.
Proof. unfold let_intro_stmt; intros; tunfold; intros; reflexivity. Qed.

Theorem let_hoist_gen : let_hoist_gen_stmt.
Proof.
  unfold let_hoist_gen_stmt; intros; unfold teq, Gen, Acc, scons, stl; intro s.
  cbv beta iota zeta; rewrite !Z.add_0_l.
  destruct (in_range (s O) (n - 0)); reflexivity.
Qed.

Theorem let_hoist_sum : let_hoist_sum_stmt.
Proof.
  unfold let_hoist_sum_stmt; intros; unfold teq, Sum, Gen, Acc, scons, stl; intro s.
  cbv beta iota zeta.
  apply sumn_ext; intros i Hi.
  rewrite (in_range_of i (n - 0)) by lia.
  reflexivity.
Qed.

Theorem sum_stage : sum_stage_stmt.
Proof.
  unfold sum_stage_stmt; intros; unfold teq, Sum, Gen, Acc, scons, stl; intro s.
  cbv beta iota zeta.
  apply sumn_ext; intros i Hi.
  rewrite (in_range_of i (n - 0)) by lia.
  reflexivity.
Qed.

End Proofs.
