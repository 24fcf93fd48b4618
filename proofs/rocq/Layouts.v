(** * The CuTe layout algebra of the [layout] crate (thesis chapter 6): definitions and laws

    A layout is read here as the crate reads it for every operation: its flattened
    modes [(extent, stride)], first mode fastest ([Layout::modes]; a hierarchical
    layout's value at a 1-D index is its flattening's, since [idx_crd] of a nested
    shape is colexicographic over the leaves).

    - [apply] is the crate's interpretation ([Layout::apply]): the index's digits in
      the mixed radix of the extents, the last mode taking whatever is left (it
      "absorbs the overflow"), dotted with the strides.
    - [eval] takes every digit modulo its extent. On [[0, size)] the two agree
      ([apply_eval]); [eval] has the simpler algebra, so the laws are proved of it
      and carried to [apply] on the domain.

    Proved here, over [Z], with no axiom:
    - [idx_crd]/[crd_idx] are inverse bijections between [[0, size)] and the
      coordinates in range, and [apply] is the dot product of [idx_crd] with the
      strides ([apply_dot]);
    - coalescing (the crate's algorithm, [coalesce_modes], step for step) keeps the
      size and the values on [[0, size)] ([coalesce_size], [coalesce_apply]); beyond
      the size the law fails (the crate's test: [(3,1):(1,100)] at 5);
    - concatenation: [(A, B)] at [a + size A * b] is [A a + B b] ([concat_apply]);
    - a compact layout (each stride the product of the extents before it) is the
      identity on [[0, size)] ([compact_identity]), the fact behind the complement's
      bijection onto [[0, N)].

    Not proved here: the composition and complement algorithms themselves (their
    results are checked against the defining properties by the crate's property
    tests, [layout/tests]). *)

From Coq Require Import ZArith Lia List.
Import ListNotations.
Open Scope Z_scope.

Definition mode := (Z * Z)%type.

(** Extents all positive (a layout with an extent 0 has an empty domain). *)
Definition positive (ms : list mode) : Prop := Forall (fun m => 0 < fst m) ms.

Fixpoint size (ms : list mode) : Z :=
  match ms with
  | [] => 1
  | (s, _) :: rest => s * size rest
  end.

Fixpoint eval (ms : list mode) (i : Z) : Z :=
  match ms with
  | [] => 0
  | (s, d) :: rest => (i mod s) * d + eval rest (i / s)
  end.

Fixpoint apply (ms : list mode) (i : Z) : Z :=
  match ms with
  | [] => 0
  | [(_, d)] => i * d
  | (s, d) :: rest => (i mod s) * d + apply rest (i / s)
  end.

Lemma size_pos : forall ms, positive ms -> 0 < size ms.
Proof.
  induction ms as [| [s d] rest IH]; intros P; simpl; [lia |].
  inversion P as [| ? ? Ps Prest]; subst. simpl in Ps. specialize (IH Prest).
  apply Z.mul_pos_pos; assumption.
Qed.

Lemma size_app : forall xs ys, size (xs ++ ys) = size xs * size ys.
Proof.
  induction xs as [| [s d] rest IH]; intros ys.
  - change (size ys = 1 * size ys). ring.
  - change (s * size (rest ++ ys) = s * size rest * size ys). rewrite IH. ring.
Qed.

Lemma positive_app : forall xs ys, positive (xs ++ ys) <-> positive xs /\ positive ys.
Proof. intros. unfold positive. apply Forall_app. Qed.

(** The two interpretations agree on the domain. *)
Theorem apply_eval : forall ms i, positive ms -> 0 <= i < size ms -> apply ms i = eval ms i.
Proof.
  induction ms as [| [s d] rest IH]; intros i P R; [reflexivity |].
  inversion P as [| ? ? Ps Prest]; subst. simpl in Ps.
  destruct rest as [| m rest'].
  - simpl in *. rewrite Z.mod_small by lia. lia.
  - change (apply ((s, d) :: m :: rest') i) with ((i mod s) * d + apply (m :: rest') (i / s)).
    change (eval ((s, d) :: m :: rest') i) with ((i mod s) * d + eval (m :: rest') (i / s)).
    f_equal. apply IH; [exact Prest |].
    pose proof (size_pos _ Prest).
    change (size ((s, d) :: m :: rest')) with (s * size (m :: rest')) in R. split.
    + apply Z.div_pos; lia.
    + apply Z.div_lt_upper_bound; lia.
Qed.

(** Appending: the first part reads the index, the second what the first leaves. *)
Lemma eval_app : forall xs ys i, positive xs ->
  eval (xs ++ ys) i = eval xs i + eval ys (i / size xs).
Proof.
  induction xs as [| [s d] rest IH]; intros ys i P; simpl.
  - rewrite Z.div_1_r. ring.
  - inversion P as [| ? ? Ps Prest]; subst. simpl in Ps.
    rewrite IH by exact Prest. rewrite Z.div_div by (pose proof (size_pos _ Prest); lia).
    ring.
Qed.

(** [eval] is periodic with the size. *)
Lemma eval_period : forall ms i k, positive ms -> eval ms (i + size ms * k) = eval ms i.
Proof.
  induction ms as [| [s d] rest IH]; intros i k P; [reflexivity |].
  inversion P as [| ? ? Ps Prest]; subst. simpl in Ps. simpl.
  replace (i + s * size rest * k) with (i + (size rest * k) * s) by ring.
  rewrite Z.mod_add by lia. rewrite Z.div_add by lia.
  rewrite IH by exact Prest. reflexivity.
Qed.

(** ** Coordinates *)

Fixpoint idx_crd (ss : list Z) (i : Z) : list Z :=
  match ss with
  | [] => []
  | [_] => [i]
  | s :: rest => (i mod s) :: idx_crd rest (i / s)
  end.

Fixpoint crd_idx (ss : list Z) (c : list Z) : Z :=
  match ss, c with
  | s :: rest, x :: cs => x + s * crd_idx rest cs
  | _, _ => 0
  end.

Fixpoint dot (c : list Z) (ds : list Z) : Z :=
  match c, ds with
  | x :: cs, d :: rest => x * d + dot cs rest
  | _, _ => 0
  end.

Definition extents (ms : list mode) : list Z := map fst ms.
Definition strides (ms : list mode) : list Z := map snd ms.

Definition prod (ss : list Z) : Z := fold_right Z.mul 1 ss.

Lemma prod_pos : forall ss, Forall (fun s => 0 < s) ss -> 0 < prod ss.
Proof.
  intros ss P. induction P as [| s rest Ps Prest IH]; simpl; [lia |].
  apply Z.mul_pos_pos; assumption.
Qed.

Lemma size_prod : forall ms, size ms = prod (extents ms).
Proof. induction ms as [| [s d] rest IH]; simpl; [reflexivity |]. rewrite IH. reflexivity. Qed.

(** The crate's [Layout::at] of the lifted coordinate: the offset of index [i] is the
    dot product of its coordinate with the strides, for every [i]. *)
Theorem apply_dot : forall ms i, apply ms i = dot (idx_crd (extents ms) i) (strides ms).
Proof.
  induction ms as [| [s d] rest IH]; intros i; [reflexivity |].
  destruct rest as [| m rest'].
  - simpl. ring.
  - change (apply ((s, d) :: m :: rest') i) with ((i mod s) * d + apply (m :: rest') (i / s)).
    rewrite IH. reflexivity.
Qed.

Definition in_range (ss c : list Z) : Prop := Forall2 (fun s x => 0 <= x < s) ss c.

Theorem idx_crd_in_range : forall ss i, Forall (fun s => 0 < s) ss -> 0 <= i < prod ss ->
  in_range ss (idx_crd ss i).
Proof.
  induction ss as [| s rest IH]; intros i P R; simpl; [constructor |].
  inversion P as [| ? ? Ps Prest]; subst.
  pose proof (prod_pos rest Prest).
  simpl in R.
  destruct rest as [| s' rest'].
  - simpl in *. constructor; [lia | constructor].
  - change (idx_crd (s :: s' :: rest') i) with ((i mod s) :: idx_crd (s' :: rest') (i / s)).
    constructor; [apply Z.mod_pos_bound; lia |].
    apply IH; [exact Prest |]. split.
    + apply Z.div_pos; lia.
    + apply Z.div_lt_upper_bound; lia.
Qed.

Theorem crd_idx_idx_crd : forall ss i, Forall (fun s => 0 < s) ss -> 0 <= i < prod ss ->
  crd_idx ss (idx_crd ss i) = i.
Proof.
  induction ss as [| s rest IH]; intros i P R; simpl in *; [lia |].
  inversion P as [| ? ? Ps Prest]; subst.
  pose proof (prod_pos rest Prest).
  destruct rest as [| s' rest'].
  - simpl. ring.
  - change (idx_crd (s :: s' :: rest') i) with ((i mod s) :: idx_crd (s' :: rest') (i / s)).
    change (crd_idx (s :: s' :: rest') ((i mod s) :: idx_crd (s' :: rest') (i / s)))
      with (i mod s + s * crd_idx (s' :: rest') (idx_crd (s' :: rest') (i / s))).
    rewrite IH; [| exact Prest | split; [apply Z.div_pos; lia | apply Z.div_lt_upper_bound; lia]].
    pose proof (Z.div_mod i s). lia.
Qed.

Theorem idx_crd_crd_idx : forall ss c, in_range ss c -> idx_crd ss (crd_idx ss c) = c.
Proof.
  intros ss c R. induction R as [| s x rest cs Rx Rrest IH]; [reflexivity |].
  destruct Rrest as [| s' x' rest' cs' Rx' Rrest'].
  - simpl. ring_simplify (x + s * 0). reflexivity.
  - change (crd_idx (s :: s' :: rest') (x :: x' :: cs'))
      with (x + s * crd_idx (s' :: rest') (x' :: cs')).
    change (idx_crd (s :: s' :: rest') (x + s * crd_idx (s' :: rest') (x' :: cs')))
      with (((x + s * crd_idx (s' :: rest') (x' :: cs')) mod s)
            :: idx_crd (s' :: rest') ((x + s * crd_idx (s' :: rest') (x' :: cs')) / s)).
    rewrite (Z.mul_comm s). rewrite Z.mod_add by lia. rewrite Z.div_add by lia.
    rewrite Z.mod_small by lia. rewrite Z.div_small by lia. rewrite Z.add_0_l.
    rewrite IH. reflexivity.
Qed.

(** ** Coalescing, as [coalesce_modes] does it

    Left to right over the modes: an extent-1 mode is dropped; a mode [s:d] whose
    stride is the extent times stride of the last mode kept, [s1:d1], merges into it
    ([s1*s : d1]); any other is kept. The modes kept are held last first ([kept]). A
    layout with an extent 0 coalesces to [0:0]; one left with no mode to [1:0]. *)

Definition co_step (kept : list mode) (m : mode) : list mode :=
  if fst m =? 1 then kept
  else match kept with
       | (s1, d1) :: older =>
           if s1 * d1 =? snd m then (s1 * fst m, d1) :: older else m :: kept
       | [] => [m]
       end.

Definition coalesce (ms : list mode) : list mode :=
  if existsb (fun m => fst m =? 0) ms then [(0, 0)]
  else match rev (fold_left co_step ms []) with
       | [] => [(1, 0)]
       | out => out
       end.

Lemma eval_merge : forall s1 d1 s rest j, 0 < s1 -> 0 < s ->
  eval ((s1 * s, d1) :: rest) j = eval ((s1, d1) :: (s, s1 * d1) :: rest) j.
Proof.
  intros. simpl. rewrite Z.rem_mul_r by lia. rewrite Z.div_div by lia. ring.
Qed.

Lemma co_step_eval : forall kept s d rest i,
  positive (rev kept) -> 0 < s ->
  positive (rev (co_step kept (s, d))) /\
  size (rev (co_step kept (s, d)) ++ rest) = size (rev kept ++ (s, d) :: rest) /\
  eval (rev (co_step kept (s, d)) ++ rest) i = eval (rev kept ++ (s, d) :: rest) i.
Proof.
  intros kept s d rest i P Ps. unfold co_step. cbn [fst snd].
  destruct (Z.eqb_spec s 1) as [E | E].
  - subst s. repeat split; [exact P | |].
    + rewrite !size_app. change (size ((1, d) :: rest)) with (1 * size rest). ring.
    + rewrite !eval_app by exact P.
      change (eval ((1, d) :: rest) (i / size (rev kept)))
        with ((i / size (rev kept)) mod 1 * d + eval rest (i / size (rev kept) / 1)).
      rewrite Z.mod_1_r, Z.div_1_r. ring.
  - destruct kept as [| [s1 d1] older].
    + split; [constructor; [simpl; lia | constructor] | split; reflexivity].
    + simpl rev in P |- *. apply positive_app in P. destruct P as [Pold P1].
      inversion P1 as [| ? ? Ps1 _]; subst. simpl in Ps1.
      destruct (Z.eqb_spec (s1 * d1) d) as [M | M].
      * subst d. simpl rev. split; [| split].
        -- apply positive_app. split; [exact Pold | constructor; [simpl; apply Z.mul_pos_pos; lia | constructor]].
        -- rewrite !size_app.
           change (size [(s1 * s, d1)]) with (s1 * s * 1).
           change (size [(s1, d1)]) with (s1 * 1).
           change (size ((s, s1 * d1) :: rest)) with (s * size rest).
           change (size ((s1 * s, d1) :: rest)) with (s1 * s * size rest). ring.
        -- rewrite <- !app_assoc. simpl app.
           rewrite (eval_app (rev older) ((s1 * s, d1) :: rest)) by exact Pold.
           rewrite (eval_app (rev older) ((s1, d1) :: (s, s1 * d1) :: rest)) by exact Pold.
           rewrite eval_merge by lia. reflexivity.
      * simpl rev. split; [| split].
        -- apply positive_app. split; [apply positive_app; split; [exact Pold | exact P1] |].
           constructor; [simpl; lia | constructor].
        -- rewrite <- !app_assoc. reflexivity.
        -- rewrite <- !app_assoc. reflexivity.
Qed.

Lemma fold_co_step : forall rest kept i,
  positive (rev kept) -> positive rest ->
  positive (rev (fold_left co_step rest kept)) /\
  size (rev (fold_left co_step rest kept)) = size (rev kept ++ rest) /\
  eval (rev (fold_left co_step rest kept)) i = eval (rev kept ++ rest) i.
Proof.
  induction rest as [| [s d] rest IH]; intros kept i P Prest; cbn [fold_left].
  - rewrite app_nil_r. split; [exact P | split; reflexivity].
  - inversion Prest as [| ? ? Ps Prest']; subst. simpl in Ps.
    destruct (co_step_eval kept s d rest i P Ps) as [P' [S' E']].
    destruct (IH (co_step kept (s, d)) i P' Prest') as [P'' [S'' E'']].
    split; [exact P'' | split; [rewrite S''; exact S' | rewrite E''; exact E']].
Qed.

Lemma no_zero_positive : forall ms, Forall (fun m => 0 <= fst m) ms ->
  existsb (fun m => fst m =? 0) ms = false -> positive ms.
Proof.
  induction ms as [| [s d] rest IH]; intros N Z0; [constructor |].
  simpl in Z0. apply Bool.orb_false_iff in Z0. destruct Z0 as [Zs Zr].
  inversion N; subst. constructor.
  - simpl in *. apply Z.eqb_neq in Zs. lia.
  - apply IH; assumption.
Qed.

Lemma zero_size : forall ms, existsb (fun m => fst m =? 0) ms = true -> size ms = 0.
Proof.
  induction ms as [| [s d] rest IH]; intros Z0; simpl in *; [discriminate |].
  apply Bool.orb_true_iff in Z0. destruct Z0 as [Zs | Zr].
  - apply Z.eqb_eq in Zs. subst. ring.
  - rewrite IH by exact Zr. ring.
Qed.

(** Coalescing keeps the size (extents are non-negative in every layout). *)
Theorem coalesce_size : forall ms, Forall (fun m => 0 <= fst m) ms ->
  size (coalesce ms) = size ms.
Proof.
  intros ms N. unfold coalesce.
  destruct (existsb (fun m => fst m =? 0) ms) eqn:Z0.
  - rewrite (zero_size ms Z0). reflexivity.
  - pose proof (no_zero_positive ms N Z0) as P.
    destruct (fold_co_step ms [] 0 (Forall_nil _) P) as [_ [S _]].
    destruct (rev (fold_left co_step ms [])) eqn:R; simpl in S |- *; lia.
Qed.

(** Coalescing keeps every value of [eval], and so of the crate's [apply] on the
    domain. *)
Theorem coalesce_eval : forall ms i, positive ms -> eval (coalesce ms) i = eval ms i.
Proof.
  intros ms i P. unfold coalesce.
  assert (existsb (fun m => fst m =? 0) ms = false) as Z0.
  { clear i. induction P as [| [s d] rest Ps Prest IH]; [reflexivity |].
    simpl in *. rewrite IH. apply Bool.orb_false_iff. split; [apply Z.eqb_neq; lia | reflexivity]. }
  rewrite Z0.
  destruct (fold_co_step ms [] i (Forall_nil _) P) as [_ [_ E]].
  destruct (rev (fold_left co_step ms [])) eqn:R; simpl in E |- *; lia.
Qed.

Theorem coalesce_apply : forall ms i, Forall (fun m => 0 <= fst m) ms ->
  0 <= i < size ms -> apply (coalesce ms) i = apply ms i.
Proof.
  intros ms i N R. unfold coalesce.
  destruct (existsb (fun m => fst m =? 0) ms) eqn:Z0.
  - rewrite zero_size in R by exact Z0. lia.
  - pose proof (no_zero_positive ms N Z0) as P.
    destruct (fold_co_step ms [] i (Forall_nil _) P) as [P' [S E]].
    rewrite (apply_eval ms i P R).
    destruct (rev (fold_left co_step ms [])) as [| m out] eqn:Rv.
    + simpl in *. lia.
    + rewrite apply_eval; [simpl in E; exact E | exact P' | simpl in S |- *; lia].
Qed.

(** ** Concatenation *)

Theorem concat_eval : forall xs ys a b, positive xs -> 0 <= a < size xs ->
  eval (xs ++ ys) (a + size xs * b) = eval xs a + eval ys b.
Proof.
  intros xs ys a b P R. rewrite eval_app by exact P.
  rewrite eval_period by exact P.
  rewrite Z.mul_comm, Z.div_add by lia. rewrite Z.div_small by lia. reflexivity.
Qed.

Theorem concat_apply : forall xs ys a b, positive xs -> positive ys ->
  0 <= a < size xs -> 0 <= b < size ys ->
  apply (xs ++ ys) (a + size xs * b) = apply xs a + apply ys b.
Proof.
  intros xs ys a b Px Py Ra Rb.
  rewrite !apply_eval; try assumption.
  - apply concat_eval; assumption.
  - apply positive_app. split; assumption.
  - rewrite size_app. pose proof (size_pos _ Px). split; [nia |].
    apply Z.lt_le_trans with (size xs + size xs * b); [lia |].
    replace (size xs + size xs * b) with (size xs * (b + 1)) by ring.
    apply Z.mul_le_mono_nonneg_l; lia.
Qed.

(** ** Compact layouts *)

(** Strides that count: the first [c], each next the extent times stride before it. *)
Fixpoint compact_from (c : Z) (ss : list Z) : list mode :=
  match ss with
  | [] => []
  | s :: rest => (s, c) :: compact_from (s * c) rest
  end.

Lemma compact_eval : forall ss c i, Forall (fun s => 0 < s) ss ->
  eval (compact_from c ss) i = c * (i mod prod ss).
Proof.
  induction ss as [| s rest IH]; intros c i P; simpl.
  - rewrite Z.mod_1_r. ring.
  - inversion P as [| ? ? Ps Prest]; subst. rewrite IH by exact Prest.
    pose proof (prod_pos rest Prest).
    rewrite Z.rem_mul_r by lia. ring.
Qed.

(** A compact layout with stride 1 first is the identity on its domain: it enumerates
    [[0, size)] once, in order. *)
Theorem compact_identity : forall ss i, Forall (fun s => 0 < s) ss -> 0 <= i < prod ss ->
  apply (compact_from 1 ss) i = i.
Proof.
  intros ss i P R.
  assert (Pc : forall c, positive (compact_from c ss)).
  { clear R. induction P as [| s rest Ps Prest IH]; intros c; simpl; [constructor |].
    constructor; [exact Ps | apply IH]. }
  assert (Sc : forall c, size (compact_from c ss) = prod ss).
  { clear R Pc. induction P as [| s rest Ps Prest IH]; intros c; [reflexivity |].
    change (s * size (compact_from (s * c) rest) = s * prod rest). rewrite IH. reflexivity. }
  rewrite apply_eval; [| apply Pc | rewrite Sc; exact R].
  rewrite compact_eval by exact P. rewrite Z.mod_small by lia. ring.
Qed.

(** The thesis's and the crate's examples, computed. *)
Example apply_3_4 : map (apply [(3, 4); (4, 1)]) [0; 1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11]
  = [0; 4; 8; 1; 5; 9; 2; 6; 10; 3; 7; 11].
Proof. reflexivity. Qed.

Example coalesce_2_16 : coalesce [(2, 1); (1, 6); (6, 2)] = [(12, 1)].
Proof. reflexivity. Qed.

Example coalesce_outside_domain :
  coalesce [(3, 1); (1, 100)] = [(3, 1)] /\ apply [(3, 1); (1, 100)] 5 = 102 /\
  apply [(3, 1)] 5 = 5.
Proof. repeat split. Qed.

Print Assumptions coalesce_apply.
Print Assumptions concat_apply.
Print Assumptions compact_identity.
Print Assumptions crd_idx_idx_crd.
Print Assumptions idx_crd_crd_idx.
Print Assumptions apply_dot.
