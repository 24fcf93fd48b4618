(** The semantics of ATL (DESIGN §3.2) as a shallow embedding.

    A tensor is a function from an infinite index sequence ("stream") to a scalar:
    [t s] is the element at [s 0, s 1, ...], where only the first [rank] positions
    matter, and out of range positions read zero. This is the interpreter's
    out-of-bounds convention made total: the zero of every shape is [fun _ => 0], so no
    construct needs its argument's shape to produce a zero. Only the reshape operators
    take shapes, as explicit [list Z] arguments, because their extents are those of
    their argument (the interpreter knows them statically).

    Scalars are an abstract commutative ring ([Scalar]); [Instances.v] instantiates it
    with [R] (the proofs' meaning) and [Z] (so that examples compute). Index
    arithmetic is on [Z]: [Z.div]/[Z.modulo] are floor division and modulo with
    [a / 0 = 0] and [a mod 0 = a], exactly DESIGN §3.2's conventions. *)

From Coq Require Import ZArith List Bool Ring Lia.
Import ListNotations.
Open Scope Z_scope.

Class Scalar := {
  scalar : Type;
  szero : scalar;
  sone : scalar;
  sadd : scalar -> scalar -> scalar;
  smul : scalar -> scalar -> scalar;
  ssub : scalar -> scalar -> scalar;
  sopp : scalar -> scalar;
  sring : ring_theory szero sone sadd smul ssub sopp (@eq scalar)
}.

(** Index streams. *)
Definition ix := nat -> Z.
Definition shd (s : ix) : Z := s O.
Definition stl (s : ix) : ix := fun n => s (S n).
Definition scons (k : Z) (s : ix) : ix :=
  fun n => match n with O => k | S n' => s n' end.

(** Ceiling division, [cdiv a b = -((-a) / b)]. *)
Definition cdiv (a b : Z) : Z := - ((- a) / b).

(** [0 <= k < n] as a boolean. *)
Definition in_range (k n : Z) : bool := (0 <=? k) && (k <? n).

(** The extent of [lo..hi]: empty when [hi <= lo]. *)
Definition ext (lo hi : Z) : Z := Z.max 0 (hi - lo).

(** Shapes of the reshape operators' results. *)
Definition dim0 (sh : list Z) : Z := nth 0 sh 0.
Definition dim1 (sh : list Z) : Z := nth 1 sh 0.
Definition sh_swap (sh : list Z) : list Z :=
  match sh with a :: b :: t => b :: a :: t | _ => sh end.
Definition sh_flat (sh : list Z) : list Z :=
  match sh with a :: b :: t => a * b :: t | _ => sh end.
Definition sh_split (k : Z) (sh : list Z) : list Z :=
  match sh with a :: t => cdiv a k :: k :: t | _ => sh end.
Definition sh_pad (k : Z) (sh : list Z) : list Z :=
  match sh with a :: t => a + k :: t | _ => sh end.
Definition sh_trunc (k : Z) (sh : list Z) : list Z :=
  match sh with a :: t => a - k :: t | _ => sh end.
Definition sh_concat (sa sb : list Z) : list Z :=
  match sa with a :: t => a + dim0 sb :: t | _ => sa end.

Section Semantics.
Context {K : Scalar}.

Definition T := ix -> scalar.

(** Tensor equality: equal at every index sequence (so no functional extensionality
    is needed to state or prove rules). *)
Definition teq (a b : T) : Prop := forall s, a s = b s.

(** Well-shaped: extents are naturals (as the interpreter's are), the tensor is zero
    outside the shape, and depends only on the first [length sh] indices. Every
    denotation of a well-shaped program satisfies it. *)
Fixpoint inb (sh : list Z) (s : ix) : Prop :=
  match sh with
  | [] => True
  | d :: sh' => 0 <= s O < d /\ inb sh' (stl s)
  end.
Definition agree (n : nat) (s s' : ix) : Prop := forall j, (j < n)%nat -> s j = s' j.
Definition WS (sh : list Z) (e : T) : Prop :=
  Forall (fun d => 0 <= d) sh /\
  (forall s, ~ inb sh s -> e s = szero) /\
  (forall s s', agree (length sh) s s' -> e s = e s').

(** Integer literals as scalars: [1 + 1 + ... ], negated for negative literals. *)
Fixpoint sofn (n : nat) : scalar :=
  match n with O => szero | S n' => sadd sone (sofn n') end.
Definition sofz (z : Z) : scalar :=
  if z <? 0 then sopp (sofn (Z.to_nat (- z))) else sofn (Z.to_nat z).

(** Scalars and pointwise operations. *)
Definition Lit (c : scalar) : T := fun _ => c.
Definition Add (a b : T) : T := fun s => sadd (a s) (b s).
Definition Sub (a b : T) : T := fun s => ssub (a s) (b s).
Definition Mul (a b : T) : T := fun s => smul (a s) (b s).
Definition Neg (a : T) : T := fun s => sopp (a s).

(** Scalar functions ([sqrt], [exp], [log], [abs], value [max]/[min], and
    [select(a OP b, x, y)], `lang/src/functions.rs`) are functions on the scalar type,
    applied pointwise; the comparison of [select] is a boolean function of two scalars.
    A rule that mentions one (the let-lifting rules of rules/library/let.rules) is
    stated for an arbitrary function of its arity, quantified like division's [sdiv]
    ([ssqrt], [smax], [scmp_gt] for [select(a > b, x, y)], ...; `rewrites/src/rocq.rs`),
    so it holds whatever the function does; every rule's statement quantifies over all
    tensors, so the others hold whatever a metavariable stands for, calls included. *)
Definition Fun1 (f : scalar -> scalar) (a : T) : T := fun s => f (a s).
Definition Fun2 (f : scalar -> scalar -> scalar) (a b : T) : T := fun s => f (a s) (b s).
Definition Choose (c : scalar -> scalar -> bool) (a b x y : T) : T :=
  fun s => if c (a s) (b s) then x s else y s.

(** [gen i in lo..hi: e]: element [k] is [e (lo + k)] for [0 <= k < hi - lo]. *)
Definition Gen (lo hi : Z) (e : Z -> T) : T :=
  fun s => if in_range (s O) (hi - lo) then e (lo + s O) (stl s) else szero.

(** [sum i in lo..hi: e], left to right from [lo]; zero when empty. *)
Fixpoint sumn (n : nat) (lo : Z) (f : Z -> scalar) : scalar :=
  match n with
  | O => szero
  | S n' => sadd (f lo) (sumn n' (lo + 1) f)
  end.
Definition Sum (lo hi : Z) (e : Z -> T) : T :=
  fun s => sumn (Z.to_nat (hi - lo)) lo (fun i => e i s).

(** [max i in lo..hi: e] of a scalar body (lang/src/shapes.rs, E0416): the values
    folded left to right from [bot] with [f] — the interpreter's [-inf] and scalar
    [max], [a > b ? a : b] ([atl_lang::functions::max_step]). Like the scalar
    functions' [f] in [Fun2], both are arguments: the scalar type has neither an order
    nor an infinity. A rule that mentions the construct (the max-reduction rules of
    rules/library/loops.rules) is stated for every [f] associative and commutative
    with identity [bot] (`rewrites/src/rocq.rs`), which the interpreter's [max] with
    [-inf] is over the reals. [bot] when the range is empty. *)
Fixpoint maxn (f : scalar -> scalar -> scalar) (n : nat) (lo : Z) (acc : scalar)
    (g : Z -> scalar) : scalar :=
  match n with
  | O => acc
  | S n' => maxn f n' (lo + 1) (f acc (g lo)) g
  end.
Definition MaxRed (f : scalar -> scalar -> scalar) (bot : scalar) (lo hi : Z)
    (e : Z -> T) : T :=
  fun s => maxn f (Z.to_nat (hi - lo)) lo bot (fun i => e i s).

(** [[p] * e]. *)
Definition Guard (p : bool) (e : T) : T := fun s => if p then e s else szero.

(** [e[k]]: out of range reads are zero because [e] is zero there. *)
Definition Acc (e : T) (k : Z) : T := fun s => e (scons k s).

(** Reshape operators; [sh] is the shape of the argument. *)
Definition Transpose (sh : list Z) (e : T) : T :=
  fun s => if in_range (s O) (dim1 sh) && in_range (s 1%nat) (dim0 sh)
           then e (scons (s 1%nat) (scons (s O) (stl (stl s)))) else szero.
Definition Flatten (sh : list Z) (e : T) : T :=
  fun s => if in_range (s O) (dim0 sh * dim1 sh)
           then e (scons (s O / dim1 sh) (scons (s O mod dim1 sh) (stl s))) else szero.
Definition Concat (sa sb : list Z) (a b : T) : T :=
  fun s => if in_range (s O) (dim0 sa + dim0 sb)
           then (if s O <? dim0 sa then a s else b (scons (s O - dim0 sa) (stl s)))
           else szero.
Definition Split (sh : list Z) (k : Z) (e : T) : T :=
  fun s => if in_range (s O) (cdiv (dim0 sh) k) && in_range (s 1%nat) k
           then (if s O * k + s 1%nat <? dim0 sh
                 then e (scons (s O * k + s 1%nat) (stl (stl s))) else szero)
           else szero.
Definition PadR (sh : list Z) (k : Z) (e : T) : T :=
  fun s => if in_range (s O) (dim0 sh + k)
           then (if s O <? dim0 sh then e s else szero) else szero.
Definition PadL (sh : list Z) (k : Z) (e : T) : T :=
  fun s => if in_range (s O) (dim0 sh + k)
           then (if k <=? s O then e (scons (s O - k) (stl s)) else szero) else szero.
Definition TruncR (sh : list Z) (k : Z) (e : T) : T :=
  fun s => if in_range (s O) (dim0 sh - k) then e s else szero.
Definition TruncL (sh : list Z) (k : Z) (e : T) : T :=
  fun s => if in_range (s O) (dim0 sh - k) then e (scons (s O + k) (stl s)) else szero.

(** Reading a tensor back as a row-major list of its elements (for examples). *)
Fixpoint indices (sh : list Z) : list (list Z) :=
  match sh with
  | [] => [[]]
  | d :: sh' =>
      flat_map (fun k => map (cons k) (indices sh'))
               (map Z.of_nat (seq 0 (Z.to_nat d)))
  end.
Fixpoint stream_of (l : list Z) : ix :=
  match l with [] => fun _ => 0 | k :: l' => scons k (stream_of l') end.
Definition to_list (sh : list Z) (e : T) : list scalar :=
  map (fun l => e (stream_of l)) (indices sh).

(** A tensor from its row-major elements (for example inputs). *)
Fixpoint offset (sh : list Z) (s : ix) : option nat :=
  match sh with
  | [] => Some O
  | d :: sh' =>
      if in_range (s O) d then
        match offset sh' (stl s) with
        | Some o => Some (Z.to_nat (s O) * Z.to_nat (fold_right Z.mul 1%Z sh') + o)%nat
        | None => None
        end
      else None
  end.
Definition of_list (sh : list Z) (data : list scalar) : T :=
  fun s => match offset sh s with Some o => nth o data szero | None => szero end.

End Semantics.

Declare Scope tensor_scope.
Infix "==" := teq (at level 70) : tensor_scope.
