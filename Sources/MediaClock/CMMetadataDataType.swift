// CoreMedia's names for the kinds of value a metadata item holds (`AVMetadataItem.dataType`).
// Apple's are `CFString`s; here they are `String`s, so that code from Apple's platforms that
// compares with `kCMMetadataBaseDataType_JPEG as String` compiles and compares the same text.

/// Bytes of no particular kind.
public let kCMMetadataBaseDataType_RawData = "com.apple.metadata.datatype.raw-data"
/// Text in UTF-8.
public let kCMMetadataBaseDataType_UTF8 = "com.apple.metadata.datatype.UTF-8"
/// A JPEG picture.
public let kCMMetadataBaseDataType_JPEG = "com.apple.metadata.datatype.JPEG"
/// A PNG picture.
public let kCMMetadataBaseDataType_PNG = "com.apple.metadata.datatype.PNG"
