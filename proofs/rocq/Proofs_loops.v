(** Proofs of rules/library/loops.rules. *)

From Coq Require Import ZArith List Bool Ring Lia.
From ATL Require Import Semantics Tactics Rules_loops.
Import ListNotations.
Open Scope Z_scope.

Section Proofs.
Context {K : Scalar}.
Add Ring Kring : sring.

Theorem sum_swap : sum_swap_stmt.
Proof. unfold sum_swap_stmt; intros; tunfold; intros s; apply sumn_swap. Qed.

Theorem gen_swap : gen_swap_stmt.
Proof. unfold gen_swap_stmt; intros; tunfold; intros s; simpl; bcases; finish. Qed.

Theorem transpose_gen : transpose_gen_stmt.
Proof. unfold transpose_gen_stmt; intros; tunfold; intros s; simpl; bcases; finish. Qed.

Theorem gen_rename : gen_rename_stmt.
Proof. unfold gen_rename_stmt; intros; intro s; reflexivity. Qed.

Theorem sum_gen : sum_gen_stmt.
Proof.
  unfold sum_gen_stmt; intros; tunfold; intros s; simpl; bcases; finish.
  apply sumn_zero.
Qed.

Theorem gen_sum : gen_sum_stmt.
Proof.
  unfold gen_sum_stmt; intros; tunfold; intros s; simpl; bcases; finish.
  symmetry; apply sumn_zero.
Qed.

(** Fusing nested sums: row [i] of the double sum is the block [i * c .. i * c + c - 1]
    of the fused one. *)
Lemma sumn_fuse : forall n lo c f, 1 <= c ->
  sumn n lo (fun i => sumn (Z.to_nat c) 0 (fun j => f i j))
  = sumn (n * Z.to_nat c) (lo * c) (fun k => f (k / c) (k mod c)).
Proof.
  induction n; intros lo c f Hc; simpl; [reflexivity |].
  rewrite IHn by lia. rewrite sumn_app.
  replace (lo * c + Z.of_nat (Z.to_nat c)) with ((lo + 1) * c) by lia.
  f_equal.
  replace (lo * c) with (0 + lo * c) by lia. rewrite sumn_shift.
  apply sumn_ext; intros j Hj.
  replace (j + lo * c) with (lo * c + j) by lia.
  rewrite div_mul_add, mod_mul_add by lia. reflexivity.
Qed.

Theorem sum_fuse : sum_fuse_stmt.
Proof.
  unfold sum_fuse_stmt; intros; tunfold; intros s.
  replace (c - 0) with c by lia. replace (r * c - 0) with (r * c) by lia.
  destruct (Z_lt_le_dec r 0).
  - replace (Z.to_nat (r - 0)) with O by lia.
    replace (Z.to_nat (r * c)) with O by nia. reflexivity.
  - replace (Z.to_nat (r * c)) with (Z.to_nat (r - 0) * Z.to_nat c)%nat by nia.
    rewrite (sumn_fuse _ 0 c (fun i j => e i j s)) by lia. reflexivity.
Qed.

(** Tiling a sum: term [k] of the sum is term [k mod q] of tile [k / q]; the guard
    drops the terms of the last tile past [n], and [n <= cdiv n q * q]. *)
Theorem sum_tile : sum_tile_stmt.
Proof.
  unfold sum_tile_stmt; intros; tunfold; intros s; cbv beta.
  replace (n - 0) with n by lia. replace (cdiv n q - 0) with (cdiv n q) by lia.
  replace (q - 0) with q by lia.
  destruct (Z_le_gt_dec n 0) as [Hn | Hn].
  - assert (cdiv n q <= 0).
    { unfold cdiv. pose proof (Z.div_pos (- n) q ltac:(lia) ltac:(lia)). lia. }
    replace (Z.to_nat n) with O by lia. replace (Z.to_nat (cdiv n q)) with O by lia.
    reflexivity.
  - assert (Hc : n <= cdiv n q * q).
    { unfold cdiv. pose proof (Z.mul_div_le (- n) q ltac:(lia)). nia. }
    rewrite (sumn_fuse _ 0 q
      (fun i j => if i * q + j <? n then e (i * q + j) s else szero)) by lia.
    replace (0 * q) with 0 by lia.
    replace (Z.to_nat (cdiv n q) * Z.to_nat q)%nat with (Z.to_nat (cdiv n q * q - 0)) by nia.
    fold (sumZ 0 (cdiv n q * q)
      (fun k => if k / q * q + k mod q <? n then e (k / q * q + k mod q) s else szero)).
    transitivity (sumZ (Z.max 0 0) (Z.min (cdiv n q * q) n) (fun k => e k s)).
    + rewrite Z.max_id, Z.min_r by lia. unfold sumZ. replace (n - 0) with n by lia.
      reflexivity.
    + symmetry. apply sumZ_window; intros k Hr Hk;
        (replace (k / q * q + k mod q) with k
           by (pose proof (Z.div_mod k q ltac:(lia)); lia));
        destruct (k <? n) eqn:?; b2p; try reflexivity; lia.
Qed.

Theorem split_gen : split_gen_stmt.
Proof. unfold split_gen_stmt; intros; tunfold; intros s; simpl; bcases; finish. Qed.

Theorem split_sum : split_sum_stmt.
Proof.
  unfold split_sum_stmt; intros; tunfold; intros s; simpl.
  apply (sumZ_split lo k hi (fun i => e i s)); lia.
Qed.

Theorem shift_gen : shift_gen_stmt.
Proof. unfold shift_gen_stmt; intros; tunfold; intros s; simpl; bcases; finish. Qed.

Theorem shift_sum : shift_sum_stmt.
Proof.
  unfold shift_sum_stmt; intros; tunfold; intros s.
  replace (hi + d - (lo + d)) with (hi - lo) by lia.
  rewrite sumn_shift. apply sumn_ext; intros i _.
  replace (i + d - d) with i by lia; reflexivity.
Qed.

Theorem gen_lo_zero : gen_lo_zero_stmt.
Proof. unfold gen_lo_zero_stmt; intros; tunfold; intros s; simpl; bcases; finish. Qed.

Theorem sum_guard_range : sum_guard_range_stmt.
Proof.
  unfold sum_guard_range_stmt; intros; tunfold; intros s.
  apply (sumZ_window lo hi a b); intros i Hr Hi.
  - destruct ((a <=? i) && (i <? b)) eqn:?; b2p; try reflexivity; lia.
  - destruct ((a <=? i) && (i <? b)) eqn:?; b2p; try reflexivity; lia.
Qed.

Theorem sum_guard_hi : sum_guard_hi_stmt.
Proof.
  unfold sum_guard_hi_stmt; intros; tunfold; intros s.
  transitivity (sumZ (Z.max lo lo) (Z.min hi b) (fun i => e i s));
    [| rewrite Z.max_id; reflexivity].
  apply (sumZ_window lo hi lo b); intros i Hr Hi.
  - destruct (i <? b) eqn:?; b2p; try reflexivity; lia.
  - destruct (i <? b) eqn:?; b2p; try reflexivity; lia.
Qed.

Theorem sum_guard_lo : sum_guard_lo_stmt.
Proof.
  unfold sum_guard_lo_stmt; intros; tunfold; intros s.
  transitivity (sumZ (Z.max lo a) (Z.min hi hi) (fun i => e i s));
    [| rewrite Z.min_id; reflexivity].
  apply (sumZ_window lo hi a hi); intros i Hr Hi.
  - destruct (a <=? i) eqn:?; b2p; try reflexivity; lia.
  - destruct (a <=? i) eqn:?; b2p; try reflexivity; lia.
Qed.

(** A sum of terms that vanish except at [k]: the window [k..k+1] of [sumZ_window]. *)
Lemma sum_delta_at : forall lo hi k (g : Z -> scalar) (f : Z -> scalar),
  (forall i, i = k -> f i = g i) ->
  (forall i, i <> k -> f i = szero) ->
  sumZ lo hi f = if (lo <=? k) && (k <? hi) then g k else szero.
Proof.
  intros lo hi k g f Hk Hz.
  rewrite (sumZ_window lo hi k (k + 1) f g)
    by (intros i Hr Hi; first [apply Hk; lia | apply Hz; lia]).
  destruct (lo <=? k) eqn:H1; destruct (k <? hi) eqn:H2; simpl.
  - apply Z.leb_le in H1; apply Z.ltb_lt in H2.
    replace (Z.max lo k) with k by lia. replace (Z.min hi (k + 1)) with (k + 1) by lia.
    unfold sumZ. replace (Z.to_nat (k + 1 - k)) with 1%nat by lia. simpl. ring.
  - apply Z.ltb_ge in H2; apply sumZ_empty; lia.
  - apply Z.leb_gt in H1; apply sumZ_empty; lia.
  - apply Z.leb_gt in H1; apply sumZ_empty; lia.
Qed.

Theorem sum_delta : sum_delta_stmt.
Proof.
  unfold sum_delta_stmt; intros; tunfold; intros s.
  apply (sum_delta_at lo hi k (fun i => e i s)); intros i Hi.
  - subst i; rewrite Z.eqb_refl; reflexivity.
  - destruct (i =? k) eqn:E; b2p; [lia | reflexivity].
Qed.

Theorem sum_delta_l : sum_delta_l_stmt.
Proof.
  unfold sum_delta_l_stmt; intros; tunfold; intros s.
  apply (sum_delta_at lo hi k (fun i => e i s)); intros i Hi.
  - subst i; rewrite Z.eqb_refl; reflexivity.
  - destruct (k =? i) eqn:E; b2p; [lia | reflexivity].
Qed.

(** Max-reductions. [maxn f n lo acc g] folds [g lo, ..., g (lo + n - 1)] into [acc]
    with [f]; the rules assume [f] associative and commutative with identity [bot]
    (the generated hypotheses), so a fold is [f acc] of the fold from [bot], and the
    folds split, shift, nest and commute like sums. *)
Section MaxFold.
Variable f : scalar -> scalar -> scalar.
Variable bot : scalar.
Hypothesis f_assoc : forall a b c, f a (f b c) = f (f a b) c.
Hypothesis f_comm : forall a b, f a b = f b a.
Hypothesis f_id : forall a, f bot a = a.

Lemma f_id_r : forall a, f a bot = a.
Proof. intros a; rewrite f_comm; apply f_id. Qed.

Lemma maxn_ext : forall n lo acc g h,
  (forall i, lo <= i < lo + Z.of_nat n -> g i = h i) ->
  maxn f n lo acc g = maxn f n lo acc h.
Proof.
  induction n; intros lo acc g h H; simpl; [reflexivity |].
  rewrite (H lo) by lia. apply IHn; intros i Hi; apply H; lia.
Qed.

Lemma maxn_acc : forall n lo acc g, maxn f n lo acc g = f acc (maxn f n lo bot g).
Proof.
  induction n; intros lo acc g; simpl; [symmetry; apply f_id_r |].
  rewrite (IHn _ (f acc (g lo))), (IHn _ (f bot (g lo))), f_id, f_assoc. reflexivity.
Qed.

Lemma maxn_app : forall n m lo acc g,
  maxn f (n + m) lo acc g = maxn f m (lo + Z.of_nat n) (maxn f n lo acc g) g.
Proof.
  induction n; intros m lo acc g; simpl.
  - replace (lo + 0) with lo by lia. reflexivity.
  - rewrite IHn. f_equal. lia.
Qed.

Lemma maxn_shift : forall n lo d acc g,
  maxn f n (lo + d) acc g = maxn f n lo acc (fun i => g (i + d)).
Proof.
  induction n; intros lo d acc g; simpl; [reflexivity |].
  replace (lo + d + 1) with (lo + 1 + d) by lia. rewrite IHn. reflexivity.
Qed.

Lemma maxn_fuse : forall n lo q acc g, 0 <= q ->
  maxn f n lo acc (fun i => maxn f (Z.to_nat q) 0 bot (fun j => g (i * q + j)))
  = maxn f (n * Z.to_nat q) (lo * q) acc g.
Proof.
  induction n; intros lo q acc g Hq; simpl; [reflexivity |].
  rewrite IHn by lia. rewrite maxn_app.
  replace (lo * q + Z.of_nat (Z.to_nat q)) with ((lo + 1) * q) by lia.
  f_equal.
  rewrite (maxn_acc _ (lo * q)). f_equal.
  replace (lo * q) with (0 + lo * q) by lia. rewrite maxn_shift.
  apply maxn_ext; intros j _. f_equal. lia.
Qed.

Lemma maxn_f : forall n lo a b,
  maxn f n lo bot (fun i => f (a i) (b i)) = f (maxn f n lo bot a) (maxn f n lo bot b).
Proof.
  induction n; intros lo a b; simpl; [symmetry; apply f_id |].
  rewrite !(maxn_acc _ _ (f bot _)), !f_id, IHn.
  rewrite <- !f_assoc. f_equal.
  rewrite !f_assoc. f_equal. apply f_comm.
Qed.

Lemma maxn_swap : forall n m lo lo' g,
  maxn f n lo bot (fun i => maxn f m lo' bot (fun j => g i j))
  = maxn f m lo' bot (fun j => maxn f n lo bot (fun i => g i j)).
Proof.
  induction n; intros m lo lo' g; simpl.
  - revert lo'. induction m; intros lo'; simpl; [reflexivity |].
    rewrite f_id. apply IHm.
  - rewrite maxn_acc, f_id, IHn.
    rewrite <- maxn_f. apply maxn_ext; intros j _.
    rewrite (maxn_acc _ _ (f bot _)), f_id. reflexivity.
Qed.
End MaxFold.

Theorem max_tile : max_tile_stmt.
Proof.
  unfold max_tile_stmt; intros; unfold teq, MaxRed; intros s; cbv beta.
  replace (n - 0) with n by lia. replace (n / q - 0) with (n / q) by lia.
  replace (q - 0) with q by lia.
  assert (Hn : n = n / q * q) by (pose proof (Z.div_mod n q ltac:(lia)); lia).
  destruct (Z_le_gt_dec (n / q) 0) as [Hc | Hc].
  - replace (Z.to_nat (n / q)) with O by lia. replace (Z.to_nat n) with O by nia.
    reflexivity.
  - rewrite (maxn_fuse smax sbot H H0 H1 _ 0 q sbot (fun k => e k s)) by lia.
    replace (Z.to_nat (n / q) * Z.to_nat q)%nat with (Z.to_nat n) by nia.
    reflexivity.
Qed.

Theorem max_swap : max_swap_stmt.
Proof.
  unfold max_swap_stmt; intros; unfold teq, MaxRed; intros s.
  apply (maxn_swap smax sbot H H0 H1).
Qed.

Theorem max_stage : max_stage_stmt.
Proof.
  unfold max_stage_stmt; intros; unfold teq, MaxRed, Gen, Acc, scons, stl; intro s.
  cbv beta iota zeta.
  apply (maxn_ext smax); intros i Hi.
  rewrite (in_range_of i (n - 0)) by lia.
  reflexivity.
Qed.

End Proofs.
