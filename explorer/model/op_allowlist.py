"""The op types an imported graph may contain: an explicit allow-list of pure-compute ops (plain data).

TensorFlow's security policy says models are programs. "Registered and not stateful" is NOT a
safety test: ReadFile, MatchingFiles, ImmutableConst (maps a file), DecodeProtoV2 (its
descriptor_source may name a file), PyFuncStateless and DebugIdentity (debug_urls=file://) are all
``is_stateful=False`` in TF 2.21. So every op type allowed is named here; ``DENY_REASONS`` only
makes refusals clearer. ``worker.safety`` walks graphs and functions against this list.
"""

from __future__ import annotations

_STRUCTURE = """Placeholder PlaceholderWithDefault Const HostConst Identity IdentityN NoOp _Arg _Retval
 _DeviceArg _DeviceRetval PartitionedCall StatefulPartitionedCall StopGradient PreventGradient Snapshot
 EnsureShape CheckNumerics CheckNumericsV2 Assert"""
# Reading variables is needed by SavedModel signatures; assignments are not (forward pass only).
_VARIABLES = "VarHandleOp ReadVariableOp VariableShape VarIsInitializedOp ResourceGather"
_CONTROL = """If StatelessIf While StatelessWhile Case StatelessCase Switch Merge Enter Exit NextIteration
 LoopCond ControlTrigger"""
_ARRAY = """Reshape Shape ShapeN Size Rank ExpandDims Squeeze Transpose ConjugateTranspose ConcatV2 Concat
 ConcatOffset Pack Unpack Split SplitV Slice StridedSlice Tile Pad PadV2 MirrorPad Fill ZerosLike OnesLike
 Range Gather GatherV2 GatherNd ScatterNd TensorScatterUpdate TensorScatterAdd Where Select SelectV2
 BroadcastTo BroadcastArgs BroadcastGradientArgs Reverse ReverseV2 Cast Bitcast OneHot SpaceToBatchND
 BatchToSpaceND SpaceToDepth DepthToSpace DynamicStitch ParallelDynamicStitch Unique InvertPermutation
 MatrixBandPart MatrixDiag MatrixDiagV3 MatrixDiagPart MatrixDiagPartV3 MatrixSetDiagV3 LinSpace Cumsum
 Cumprod TopKV2 ArgMax ArgMin ClipByValue ReverseSequence ExtractImagePatches UnsortedSegmentSum
 UnsortedSegmentMax SegmentSum Bucketize Einsum"""
_MATH = """Add AddV2 AddN Sub Mul MulNoNan Div RealDiv DivNoNan FloorDiv FloorMod Mod TruncateDiv TruncateMod
 Maximum Minimum Pow SquaredDifference Neg Abs Sign Square Sqrt Rsqrt Exp Expm1 Log Log1p Reciprocal Inv
 Floor Ceil Round Rint Sin Cos Tan Tanh Sigmoid Erf Erfc Erfinv Atan Atan2 Asin Acos Sinh Cosh Asinh Acosh
 Atanh IsNan IsInf IsFinite Equal NotEqual Less LessEqual Greater GreaterEqual LogicalAnd LogicalOr
 LogicalNot BitwiseAnd BitwiseOr BitwiseXor LeftShift RightShift Sum Mean Max Min Prod All Any
 EuclideanNorm Xdivy Xlog1py Xlogy Lgamma Digamma ApproximateEqual Real Imag Complex ComplexAbs Conj"""
_NN = """MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3 BiasAdd BiasAddV1 Relu Relu6 Elu Selu LeakyRelu
 Softplus Softsign Softmax LogSoftmax Conv2D Conv3D Conv2DBackpropInput Conv3DBackpropInputV2
 DepthwiseConv2dNative MaxPool MaxPoolV2 MaxPool3D AvgPool AvgPool3D FusedBatchNorm FusedBatchNormV2
 FusedBatchNormV3 LRN ResizeBilinear ResizeNearestNeighbor ResizeBicubic ResizeArea ScaleAndTranslate
 CropAndResize L2Loss Dilation2D InTopKV2 FakeQuantWithMinMaxArgs FakeQuantWithMinMaxVars
 FakeQuantWithMinMaxVarsPerChannel Conv MatrixInverse Cholesky Qr Svd MatrixDeterminant"""
# Already-fused ops, e.g. an optimised graph uploaded again.
_FUSED = """_FusedConv2D _FusedMatMul _FusedDepthwiseConv2dNative _FusedBatchNormEx _FusedConv3D
 FusedPadConv2D FusedResizeAndPadConv2D"""
# The in-memory lists a loop collects its steps in (Keras' LSTM and GRU, tf.while_loop, TF1's dynamic_rnn): they hold
# tensors of the step only and touch no file, process or host.
_LISTS = """TensorListReserve TensorListFromTensor TensorListGetItem TensorListSetItem TensorListStack
 TensorListLength TensorListElementShape TensorListPushBack TensorListPopBack EmptyTensorList TensorListGather
 TensorListScatterV2 TensorListScatterIntoExistingList TensorListConcatV2 TensorListSplit TensorListResize
 TensorArrayV3 TensorArrayReadV3 TensorArrayWriteV3 TensorArrayGatherV3 TensorArrayScatterV3 TensorArraySizeV3
 TensorArrayConcatV3 TensorArraySplitV3 TensorArrayCloseV3"""
_RANDOM = """StatelessRandomUniform StatelessRandomNormal StatelessTruncatedNormal StatelessRandomUniformV2
 StatelessRandomNormalV2 StatelessTruncatedNormalV2 StatelessRandomUniformIntV2 StatelessRandomGetKeyCounter
 StatelessRandomGetAlg StatelessRandomGetKeyCounterAlg RandomUniform RandomStandardNormal TruncatedNormal
 RandomUniformInt"""

ALLOWED_OPS = frozenset(" ".join([_STRUCTURE, _VARIABLES, _CONTROL, _ARRAY, _MATH, _NN, _FUSED, _LISTS, _RANDOM]).split())

# Only for better messages; anything not allowed is refused anyway.
DENY_REASONS = {}
for _names, _why in [
    ("ReadFile MatchingFiles ImmutableConst WholeFileReader WholeFileReaderV2 ReaderReadV2 ReaderRead "
     "FixedLengthRecordDataset FixedLengthRecordDatasetV2 TFRecordDataset TFRecordDatasetV2 TextLineDataset "
     "Restore RestoreV2 RestoreSlice LoadAndRemapMatrix DecodeProtoV2 InitializeTableFromTextFile "
     "InitializeTableFromTextFileV2", "reads files"),
    ("WriteFile Save SaveV2 SaveSlices MergeV2Checkpoints CreateSummaryFileWriter WriteSummary "
     "WriteScalarSummary WriteImageSummary WriteHistogramSummary WriteRawProtoSummary DebugIdentity "
     "DebugIdentityV2 DebugIdentityV3 DebugNanCount DebugNumericSummary Print PrintV2 DatasetToTFRecord",
     "writes files / output"),
    ("PyFunc PyFuncStateless EagerPyFunc", "calls Python"),
    ("RemoteCall Send Recv _Send _Recv _HostSend _HostRecv CollectiveReduce CollectiveReduceV2 "
     "CollectiveGather CollectiveBcastSend CollectiveBcastRecv", "talks to other devices or hosts"),
    ("FileSystemSetConfiguration", "configures file systems"),
    ("AssignVariableOp AssignAddVariableOp AssignSubVariableOp Assign AssignAdd DestroyResourceOp "
     "VariableV2 Variable", "changes state"),
]:
    for _n in _names.split():
        DENY_REASONS[_n] = _why

# A model's text preprocessing (Keras' TextVectorization and StringLookup, tf.strings, tf.lookup): refused as every op
# off the list is, but said as what it is, with the way to bring the model's numeric part instead.
TEXT_PREFIXES = ("String", "Regex", "StaticRegex", "Unicode", "Lookup", "Ragged", "Substr", "AsString", "DecodeJSON")
TEXT_OPS = frozenset("HashTable HashTableV2 MutableHashTable MutableHashTableV2 MutableHashTableOfTensorsV2 "
                     "MutableDenseHashTableV2 AnonymousHashTable AnonymousMutableHashTable InitializeTable "
                     "InitializeTableV2 Bincount DenseBincount RaggedBincount SparseBincount".split())
TEXT_REASON = "text preprocessing (strings, lookup tables), which the explorer does not run"
TEXT_HINT = ("The model holds text preprocessing (a TextVectorization or StringLookup layer, tf.strings, tf.lookup): "
             "bring the numeric part instead, the model from the token ids on (for Keras: keras.Model(the "
             "vectorizer's output, the outputs), exported), whose MatMuls and convolutions are what Grappler fuses")


def text_op(op: str) -> bool:
    return op in TEXT_OPS or op.startswith(TEXT_PREFIXES)


# Ops that exist in a SavedModel only for its saver (saver_def) - never run by tf.saved_model.load (TF2).
SAVER_OPS = frozenset("SaveV2 RestoreV2 MergeV2Checkpoints ShardedFilename StringJoin Const Identity NoOp "
                      "Placeholder StaticRegexFullMatch Select _Arg _Retval Pack StatefulPartitionedCall "
                      "PartitionedCall AssignVariableOp ReadVariableOp DisableCopyOnRead".split())
